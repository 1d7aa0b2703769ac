"""`run_settings`: the settings imported afresh under an environment, for every module that
checks what the settings make of one (tests/evalserver/settings_probe.py: one probe process a
test process, the settings package run again from its first line for each environment,
without setting up every app)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from tests.evalserver.settings_probe import Evaluation, SettingsProbe

# What `run_settings` reads of the settings it imported (`values` of its answer).
READ_SETTINGS = """{
    "DEBUG": s.DEBUG,
    "ALLOWED_HOSTS": s.ALLOWED_HOSTS,
    "DATABASE": [s.DATABASES["default"]["ENGINE"], str(s.DATABASES["default"]["NAME"])],
    "REDIS_URL": s.REDIS_URL,
    "BROKER": s.CELERY_BROKER_URL,
    "MEDIA_ROOT": str(s.MEDIA_ROOT),
    "CACHE_DIR": str(s.EVALSERVER_CACHE_DIR),
    "MULTILABEL": s.EVALSERVER_MULTILABEL_FILE and str(s.EVALSERVER_MULTILABEL_FILE),
    "MAX_UPLOAD": s.EVALSERVER_MAX_UPLOAD_BYTES,
    "STORAGE": s.STORAGES["default"],
    "THROTTLE_RATES": s.EVALSERVER_THROTTLE_RATES,
}"""

# Left out of this process's environment when it is handed on: each test gives its own.
SETTINGS_VARIABLES = (
    "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL", "MEDIA_ROOT",
    "EVALSERVER_DATA_DIR", "EVALSERVER_CACHE_DIR", "EVALSERVER_MULTILABEL_FILE",
    "EVALSERVER_MAX_UPLOAD_BYTES", "EVALSERVER_STORAGE_BACKEND", "EVALSERVER_STORAGE_OPTIONS",
)

RunSettings = Callable[..., Evaluation]


@pytest.fixture(scope="session")
def settings_probe() -> Iterator[SettingsProbe]:
    """One probe process for the test process: every evaluation is a fresh import."""
    with SettingsProbe() as probe:
        yield probe


@pytest.fixture
def run_settings(settings_probe: SettingsProbe) -> RunSettings:
    """Import evalserver.settings afresh with exactly these settings variables (and the rest of
    this process's environment)."""
    def run(**variables: str) -> Evaluation:
        env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
        env.update(variables, DJANGO_SETTINGS_MODULE="evalserver.settings")
        return settings_probe.evaluate(env, READ_SETTINGS)
    return run
