"""Django settings, read from environment variables (and a `.env` file at the project root,
when there is one; real environment variables win). docs/operators/settings.md lists them.

A package of parts, each importing what it shares from the leaf `environment` (never from a
sibling's package, so there is no import circle):
- environment: the project's folder, the environment reader, DEBUG, REDIS_URL, TIME_ZONE;
- core: Django's own settings and the server's (https, metrics, database, files, uploads,
  checkpoints, logins, rate limits, the API);
- jobs: the jobs a worker claims and Celery's settings (CELERY_*), with beat's schedule;
- notifications: email and webhooks;
- accounts: django-allauth (sign-up modes, email verification, social sign-in, 2FA).

A bad value stops the process with a message naming the variable (`env.check()` below, once
every part has been read): see `evalserver.env`.
"""

from __future__ import annotations

from pathlib import Path

from evalserver.settings.core import *  # noqa: F403
from evalserver.settings.environment import *  # noqa: F403
from evalserver.settings.environment import env
from evalserver.settings.jobs import *  # noqa: F403
from evalserver.settings.notifications import *  # noqa: F403

# isort: split
# last: its AUTHENTICATION_BACKENDS (Django's, allauth's and rules') is the one in force
from evalserver.settings.accounts import *  # noqa: F403

env.check()

# Django checks that the folder of temporary upload files exists (files.E001): made at start.
EVALSERVER_UPLOAD_TEMP_DIR.mkdir(parents=True, exist_ok=True)  # noqa: F405

# SQLite needs the folder of its file to exist.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    _sqlite_name = str(DATABASES["default"]["NAME"])  # noqa: F405
    if _sqlite_name != ":memory:" and not _sqlite_name.startswith("file:"):
        Path(_sqlite_name).parent.mkdir(parents=True, exist_ok=True)
    # Web and worker processes write concurrently: a transaction takes the write lock when it
    # begins and waits up to 20 s for it, instead of failing at once with "database is locked"
    # when a read inside it would have to be upgraded to a write.
    _sqlite_options = DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
    _sqlite_options.setdefault("transaction_mode", "IMMEDIATE")
    _sqlite_options.setdefault("timeout", 20)
