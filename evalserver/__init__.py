"""The Django project: settings, URLs, WSGI entry point and the Celery app."""

from evalserver.celery import app as celery_app

__all__ = ("celery_app",)
