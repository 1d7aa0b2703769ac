"""WSGI entry point: `gunicorn evalserver.wsgi`."""

import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from leaderboard.common.request_body import RequestBodyLimits

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalserver.settings")

# The stall timeout, deadline and size cap of request bodies, enforced as they are read. (The
# client's address behind a trusted proxy is evalserver/client_address.py's middleware: it
# runs under the test client too.)
application = RequestBodyLimits(get_wsgi_application())

# Import the URLconf, and with it every view (and, through the selectors, NumPy and SciPy:
# about 0.6 s), while each worker boots, before it accepts a connection. Django would do it
# in the worker's first request, which then stalls the clients queued behind it.
import_module(settings.ROOT_URLCONF)
