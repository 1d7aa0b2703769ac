"""The Celery app. Start a worker with `celery -A evalserver worker -Q cpu` (or `-Q gpu`).

Configuration comes from the Django settings whose names start with CELERY_.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalserver.settings")

app = Celery("evalserver")
app.config_from_object("django.conf:settings", namespace="CELERY")
# tasks.py of every installed Django app, and of the `workers` package (not a Django app).
app.autodiscover_tasks()
app.autodiscover_tasks(["workers"])
app.autodiscover_tasks(["workers"], related_name="gpu_tasks")
