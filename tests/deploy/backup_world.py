"""The server that tests/deploy/test_backup_restore.py backs up and restores, run as a process of
its own against the database and media folder its environment names (DATABASE_URL, MEDIA_ROOT,
EVALSERVER_CACHE_DIR), never the test suite's own database:

    python -m tests.deploy.backup_world build   migrate, load CIFAR-10, score real models
    python -m tests.deploy.backup_world state   print what a restore must give back

Both print the state as one JSON object: the leaderboard API's answer, and the sha256 of every
stored file of every submission, read through Django's storage API by the names in the rows.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from typing import Any

import django

# scored with the real scoring code, as a worker would: three published CIFAR-10 models
MODELS = ("nas", "vgg16_keras", "resnet_basic_32")


def build() -> None:
    from django.conf import settings
    from django.core.management import call_command

    from tests import factories
    from tests.api_support import scored_in_process

    call_command("migrate", verbosity=0)
    # its report on stdout would come before the JSON line this prints
    call_command("load_benchmarks", "--benchmark", "cifar10", stdout=io.StringIO())
    for model in MODELS:
        scored_in_process(settings.EVALSERVER_DATA_DIR, model, factories.user_create(f"u-{model}"))


def state() -> dict[str, Any]:
    from django.core.files.storage import default_storage
    from django.test import Client

    from leaderboard.submissions.models import SubmissionFile

    response = Client(HTTP_HOST="localhost").get("/api/benchmarks/cifar10/leaderboard/")
    assert response.status_code == 200, response.content
    files: dict[str, str] = {}
    for stored in SubmissionFile.objects.order_by("pk"):
        for field in (stored.file, stored.compact):
            if field.name:
                with default_storage.open(field.name, "rb") as handle:
                    files[field.name] = hashlib.sha256(handle.read()).hexdigest()
    return {"leaderboard": response.json(), "files": files}


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalserver.settings_testing")
    django.setup()
    if sys.argv[1:] == ["build"]:
        build()
    elif sys.argv[1:] != ["state"]:
        sys.exit("usage: python -m tests.deploy.backup_world build|state")
    print(json.dumps(state(), sort_keys=True))
