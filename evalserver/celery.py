"""The Celery app. Start a worker with `celery -A evalserver worker -Q cpu` (or `-Q gpu`).

Configuration comes from the Django settings whose names start with CELERY_.
"""

import os

from celery import Celery

# A pool process's metrics marked dead when it ends; a worker's own /metrics, when configured.
import evalserver.metrics_exporter  # noqa: F401

# Connects the signal handlers that end each prefork pool process with the worker's main process.
import evalserver.pool_processes  # noqa: F401

# With S3 storage, the object store's client made before the pool forks.
import evalserver.storage_warm  # noqa: F401
from evalserver.broker_guard import detached_transport_guard_install

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalserver.settings")

# A worker whose Redis is killed under it reconnects instead of exiting
# (evalserver/broker_guard.py).
detached_transport_guard_install()

app = Celery("evalserver")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The tasks of each queue (leaderboard/tasks/: cpu and notify, gpu); every worker registers
# all of them, and the routes decide which queue each goes to.
app.autodiscover_tasks(["leaderboard.tasks"], related_name="cpu")
app.autodiscover_tasks(["leaderboard.tasks"], related_name="gpu")
