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
# tasks.py of every installed Django app, and of the `workers` package (not a Django app).
app.autodiscover_tasks()
app.autodiscover_tasks(["workers"])
app.autodiscover_tasks(["workers"], related_name="gpu_tasks")
