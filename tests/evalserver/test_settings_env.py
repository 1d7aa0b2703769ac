"""Settings come from the environment and fail loudly on bad values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import PROJECT_ROOT
from tests.settings_fixtures import SETTINGS_VARIABLES, RunSettings


def test_it_fails_loudly_on_a_non_integer_upload_limit(run_settings: RunSettings) -> None:
    result = run_settings(SECRET_KEY="x" * 50, EVALSERVER_MAX_UPLOAD_BYTES="abc")

    assert result.failed
    assert "ImproperlyConfigured" in result.output
    assert "EVALSERVER_MAX_UPLOAD_BYTES='abc' is not valid: expected an integer" in result.output


def test_it_lists_every_bad_value_at_once(run_settings: RunSettings) -> None:
    result = run_settings(
        DEBUG="maybe", DATABASE_URL="mongo://u:hunter2@db/x", REDIS_URL="http://cache:6379",
        EVALSERVER_MAX_UPLOAD_BYTES="0",
    )

    assert result.failed
    for name in ("DEBUG='maybe'", "SECRET_KEY is not set", "DATABASE_URL=", "REDIS_URL=",
                 "EVALSERVER_MAX_UPLOAD_BYTES='0'"):
        assert name in result.output
    assert "hunter2" not in result.output


def test_it_requires_a_secret_key_unless_debug(run_settings: RunSettings) -> None:
    assert run_settings().failed
    assert "SECRET_KEY is not set" in run_settings().output
    assert not run_settings(DEBUG="true").failed


def test_it_has_working_defaults(run_settings: RunSettings) -> None:
    result = run_settings(SECRET_KEY="x" * 50)

    assert not result.failed, result.output
    values = result.values
    assert values["DEBUG"] is False
    assert values["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]"]
    assert values["DATABASE"] == ["django.db.backends.sqlite3",
                                  str(PROJECT_ROOT / "var" / "db.sqlite3")]
    assert values["REDIS_URL"] == values["BROKER"] == "redis://127.0.0.1:6379/0"
    assert values["MEDIA_ROOT"] == str(PROJECT_ROOT / "var" / "media")
    assert values["CACHE_DIR"] == str(PROJECT_ROOT / "var" / "media" / "compiled")
    assert values["MULTILABEL"] is None
    assert values["MAX_UPLOAD"] == 512 * 1024 * 1024
    assert values["STORAGE"] == {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                 "OPTIONS": {}}


def test_it_reads_each_setting_from_the_environment(
        tmp_path: Path, run_settings: RunSettings) -> None:
    result = run_settings(
        SECRET_KEY="x" * 50, DEBUG="on", ALLOWED_HOSTS="evals.example.org, localhost",
        DATABASE_URL="postgres://evals:pw@db.internal:5433/evals",
        REDIS_URL="redis://cache:6380/2", MEDIA_ROOT=str(tmp_path / "media"),
        EVALSERVER_MULTILABEL_FILE="var/human_accuracy_v3.0.0.json",
        EVALSERVER_MAX_UPLOAD_BYTES="1_000_000",
        EVALSERVER_STORAGE_BACKEND="leaderboard.common.object_storage.S3Storage",
        EVALSERVER_STORAGE_OPTIONS='{"bucket_name": "evalserver-media"}',
    )

    assert not result.failed, result.output
    values = result.values
    assert values["DEBUG"] is True
    assert values["ALLOWED_HOSTS"] == ["evals.example.org", "localhost"]
    assert values["DATABASE"] == ["django.db.backends.postgresql", "evals"]
    assert values["REDIS_URL"] == values["BROKER"] == "redis://cache:6380/2"
    assert values["CACHE_DIR"] == str(tmp_path / "media" / "compiled")
    # relative paths are taken from the project root
    assert values["MULTILABEL"] == str(PROJECT_ROOT / "var" / "human_accuracy_v3.0.0.json")
    assert values["MAX_UPLOAD"] == 1_000_000
    # a stored file read from S3 spills to disk past 8 MiB unless the options say otherwise
    assert values["STORAGE"] == {"BACKEND": "leaderboard.common.object_storage.S3Storage",
                                 "OPTIONS": {"bucket_name": "evalserver-media",
                                             "max_memory_size": 8 * 1024 * 1024}}


def _run_program(program: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    env.update(variables, SECRET_KEY="x" * 50, DJANGO_SETTINGS_MODULE="evalserver.settings")
    return subprocess.run([sys.executable, "-c", program], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_it_never_loads_the_s3_libraries_on_the_file_system_storage(tmp_path: Path) -> None:
    """django-storages and boto3 are optional at runtime: storing, reading and the storage
    error check on the default storage import neither."""
    result = _run_program(
        "import sys, django; django.setup()\n"
        "from django.core.files.base import ContentFile\n"
        "from django.core.files.storage import default_storage\n"
        "from leaderboard.common import error_pages, storage\n"
        "name = default_storage.save('probe.txt', ContentFile(b'x'))\n"
        "with storage.stored_file_path(name) as path: assert path.read_bytes() == b'x'\n"
        "assert not storage.storage_error_transient(OSError())\n"
        "default_storage.delete(name)\n"
        "print(sorted(m for m in ('storages', 'boto3', 'botocore') if m in sys.modules))",
        MEDIA_ROOT=str(tmp_path / "media"))

    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_it_fails_loudly_when_the_s3_storage_is_named_without_django_storages() -> None:
    result = _run_program("import sys; sys.modules['storages'] = None  # not installed\n"
                          "import django; django.setup()",
                          EVALSERVER_STORAGE_BACKEND="leaderboard.common.object_storage.S3Storage")

    assert result.returncode != 0
    assert ("EVALSERVER_STORAGE_BACKEND='leaderboard.common.object_storage.S3Storage' needs "
            "django-storages[s3] (pip install -r requirements.txt)") in result.stderr


def test_it_fails_loudly_on_an_unknown_inference_device(run_settings: RunSettings) -> None:
    result = run_settings(SECRET_KEY="x" * 50, EVALSERVER_INFERENCE_DEVICE="tpu")

    assert result.failed
    assert ("EVALSERVER_INFERENCE_DEVICE='tpu' is not valid: expected one of auto, cpu, cuda"
            in result.output)


def test_it_fails_loudly_on_a_bad_storage_setting(run_settings: RunSettings) -> None:
    result = run_settings(SECRET_KEY="x" * 50, EVALSERVER_STORAGE_BACKEND="s3 please",
                          EVALSERVER_STORAGE_OPTIONS='["bucket"]')

    assert result.failed
    assert ("EVALSERVER_STORAGE_BACKEND='s3 please' is not valid: expected a dotted import path "
            "such as django.core.files.storage.FileSystemStorage") in result.output
    assert ("""EVALSERVER_STORAGE_OPTIONS='["bucket"]' is not valid: expected a JSON object """
            """such as {"bucket_name": "media"}""") in result.output


def test_it_fails_loudly_on_bad_upload_limits_and_proxies(run_settings: RunSettings) -> None:
    result = run_settings(SECRET_KEY="x" * 50, EVALSERVER_UPLOAD_STALL_TIMEOUT="0",
                          EVALSERVER_UPLOAD_DEADLINE="soon",
                          EVALSERVER_TRUSTED_PROXIES="10.0.0.0/8,the proxy")

    assert result.failed
    for line in ("EVALSERVER_UPLOAD_STALL_TIMEOUT='0' is not valid: expected an integer >= 1",
                 "EVALSERVER_UPLOAD_DEADLINE='soon' is not valid: expected an integer",
                 "EVALSERVER_TRUSTED_PROXIES='10.0.0.0/8,the proxy' is not valid: expected "
                 "comma-separated IP addresses or networks such as 172.16.0.0/12,10.0.0.5"):
        assert line in result.output


def test_it_reads_the_rate_limits(run_settings: RunSettings) -> None:
    default = run_settings(SECRET_KEY="x" * 50)
    chosen = run_settings(SECRET_KEY="x" * 50, EVALSERVER_THROTTLE_ANON="30/Min",
                          EVALSERVER_THROTTLE_USER="none", EVALSERVER_THROTTLE_UPLOADS="5 / day",
                          EVALSERVER_THROTTLE_TOKEN="1/s")

    assert not default.failed, default.output
    assert default.values["THROTTLE_RATES"] == {
        "anon": "120/minute", "user": "600/minute", "uploads": "60/hour", "token": "20/minute"}
    assert not chosen.failed, chosen.output
    assert chosen.values["THROTTLE_RATES"] == {
        "anon": "30/min", "user": None, "uploads": "5/day", "token": "1/s"}


def test_it_fails_loudly_on_bad_rate_limits(run_settings: RunSettings) -> None:
    result = run_settings(SECRET_KEY="x" * 50, EVALSERVER_THROTTLE_ANON="10/month",
                          EVALSERVER_THROTTLE_USER="many", EVALSERVER_THROTTLE_UPLOADS="0/hour",
                          EVALSERVER_THROTTLE_TOKEN="-1/minute")

    assert result.failed
    assert "ImproperlyConfigured" in result.output
    for name, value in (("ANON", "10/month"), ("USER", "many"), ("UPLOADS", "0/hour"),
                        ("TOKEN", "-1/minute")):
        assert (f"EVALSERVER_THROTTLE_{name}={value!r} is not valid: expected a rate such as "
                "100/minute (a count per second, minute, hour or day) or none") in result.output


def _gunicorn_config(**variables: str) -> subprocess.CompletedProcess[str]:
    """evalserver/gunicorn_conf.py's settings, read as gunicorn reads the file."""
    env = {k: v for k, v in os.environ.items() if k not in ("WEB_CONCURRENCY", "WEB_THREADS")}
    program = ("import json, runpy; c = runpy.run_path('evalserver/gunicorn_conf.py'); "
               "print(json.dumps({k: c[k] for k in ('worker_class', 'workers', 'threads', "
               "'timeout', 'control_socket_disable')}))")
    return subprocess.run([sys.executable, "-c", program], cwd=PROJECT_ROOT,
                          env={**env, **variables}, capture_output=True, text=True, timeout=60)


def test_it_runs_gunicorn_with_threaded_workers_from_the_environment() -> None:
    default, chosen = _gunicorn_config(), _gunicorn_config(WEB_CONCURRENCY="3", WEB_THREADS="8")

    assert json.loads(default.stdout) == {"worker_class": "gthread", "workers": 2, "threads": 4,
                                          "timeout": 30, "control_socket_disable": True}
    assert (json.loads(chosen.stdout)["workers"], json.loads(chosen.stdout)["threads"]) == (3, 8)
    bad = _gunicorn_config(WEB_THREADS="many")
    assert bad.returncode != 0
    assert "WEB_THREADS='many' is not valid: expected an integer" in bad.stderr
