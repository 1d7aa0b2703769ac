"""`/healthz` answers a probe on 127.0.0.1 over http whatever the host check and the https
redirect say, and 503 when the database does not answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from tests.helpers import PROJECT_ROOT, free_port

PROBE = """
import django
django.setup()
from django.test import Client
answer = Client().get("/healthz", HTTP_HOST="127.0.0.1:8000")
print(answer.status_code, answer.content.decode())
"""


@pytest.fixture
def production_like(settings: Settings) -> Settings:
    settings.ALLOWED_HOSTS = ["evals.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    return settings


@pytest.mark.django_db
def test_it_answers_ok_on_plain_http_for_a_host_not_allowed(production_like: Settings,
                                                            client: Client) -> None:
    answer = client.get("/healthz", HTTP_HOST="127.0.0.1:8000")

    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}


@pytest.mark.django_db
def test_it_leaves_every_other_path_to_the_host_check_and_the_redirect(
        production_like: Settings, client: Client) -> None:
    assert client.get("/", HTTP_HOST="127.0.0.1:8000").status_code == 400
    redirected = client.get("/healthz/", HTTP_HOST="evals.example.org")
    assert (redirected.status_code, redirected["Location"]) == (
        301, "https://evals.example.org/healthz/")
    assert client.post("/healthz", HTTP_HOST="evals.example.org").status_code == 301


def test_it_answers_503_when_the_database_does_not_answer() -> None:
    # a PostgreSQL URL on a port where nothing listens: a real refused connection
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalserver.settings",
           "SECRET_KEY": "x" * 50, "DEBUG": "false",
           "DATABASE_URL": f"postgres://nobody:none@127.0.0.1:{free_port()}/none"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    status, body = done.stdout.strip().split(" ", 1)
    assert status == "503"
    assert json.loads(body) == {"error": {"code": "unavailable",
                                          "message": "the database does not answer"}}
