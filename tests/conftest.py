"""Shared fixtures: the real data directory, a compile cache shared by the session, a command
runner, and real Redis / Celery worker processes."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from pytest_django.fixtures import Settings

from tests.catalog_snapshot import catalog_loaded
from tests.helpers import PROJECT_ROOT, free_port, process_group_stop

# The fixture of real CIFAR-10 models scored in-process, shared by several domains' tests; the
# S3 server and storage of the storage tests; the settings imported afresh under an
# environment (`run_settings`); each failure reported as it happens.
pytest_plugins = ["tests.scored_models", "tests.s3_fixtures", "tests.settings_fixtures",
                  "tests.failure_report"]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real public data directory (EVALSERVER_DATA_DIR, default ../shared/data)."""
    path = Path(django_settings.EVALSERVER_DATA_DIR)
    if not path.is_dir():
        pytest.fail(
            f"the data directory {path} does not exist: these tests read the real public label "
            "files. See docs/operators/data.md and set EVALSERVER_DATA_DIR.",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def compile_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of compiled label sets for the whole session, so each set compiles once."""
    return tmp_path_factory.mktemp("compiled")


@pytest.fixture
def catalog_settings(
    settings: Settings, data_dir: Path, compile_cache_dir: Path, tmp_path: Path
) -> Settings:
    """Settings that point load_benchmarks at the real data, a temporary cache and media."""
    settings.EVALSERVER_DATA_DIR = data_dir
    settings.EVALSERVER_CACHE_DIR = compile_cache_dir
    settings.EVALSERVER_MULTILABEL_FILE = None
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings


@pytest.fixture
def loaded(run_load_benchmarks: Callable[..., tuple[str, str]],
           catalog_settings: Settings) -> Settings:
    """The built-in benchmarks loaded from their bundles, no daily quota; returns settings.
    Loaded for real once a test process, copied afterwards (tests/catalog_snapshot.py)."""
    catalog_loaded(run_load_benchmarks)
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return catalog_settings


@pytest.fixture
def run_load_benchmarks(catalog_settings: Settings) -> Callable[..., tuple[str, str]]:
    """Run `manage.py load_benchmarks` in-process; returns (stdout, stderr)."""

    def run(*args: str) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        call_command("load_benchmarks", *args, stdout=out, stderr=err, no_color=True)
        return out.getvalue(), err.getvalue()

    return run


# -- processes -----------------------------------------------------------------------------------

def _redis_ping(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """REDIS_URL when it is set; otherwise a throwaway redis-server on a free port."""
    if os.environ.get("REDIS_URL"):
        url = os.environ["REDIS_URL"]
        if not _redis_ping(url):
            pytest.fail(f"REDIS_URL={url} is set but no Redis answers there", pytrace=False)
        yield url
        return
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server), "
                    "and REDIS_URL is not set", pytrace=False)
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 15
        while not _redis_ping(url):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port}", pytrace=False)
            time.sleep(0.1)
        yield url
    finally:
        process_group_stop(process)


@contextlib.contextmanager
def _running_worker(redis_url: str, log_path: Path, env: dict[str, str],
                    name: str) -> Iterator[WorkerProcess]:
    """A real `celery -A evalserver worker -Q cpu,notify` process against `redis_url`, with this
    process's Celery app pointed at the same Redis until it stops. The queues can be changed
    with EVALSERVER_TEST_WORKER_QUEUES (e.g. "cpu,gpu", set with monkeypatch.setenv)."""
    import redis

    from evalserver.celery import app
    from leaderboard.jobs.broker import broker_queue_lists

    queues = os.environ.get("EVALSERVER_TEST_WORKER_QUEUES", "cpu,notify")
    # Emptied first: an earlier test of this process may have queued work no worker took, for
    # its rows, since rolled back; their ids come again in this test's rows, and this worker
    # would run the old message on them (a stale email job failed a new webhook delivery).
    lists = broker_queue_lists()
    with redis.Redis.from_url(redis_url) as client:
        for queue in queues.split(","):
            for key in lists.get(queue, [queue]):
                client.delete(key)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "evalserver", "worker", "-Q", queues,
             "--concurrency", "1", "--loglevel", "INFO", "--without-gossip",
             "--without-mingle", "--hostname", f"{name}-{uuid.uuid4().hex[:8]}@%h"],
            cwd=PROJECT_ROOT, env={**os.environ, "REDIS_URL": redis_url, **env},
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    saved = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend}
    _point_celery_app(app, broker_url=redis_url, result_backend=redis_url)
    try:
        yield WorkerProcess(log_path, process)
    finally:
        _point_celery_app(app, **saved)
        process_group_stop(process)


@pytest.fixture
def celery_worker(redis_url: str, tmp_path: Path) -> Iterator[Path]:
    """A real Celery worker on the cpu queue (no database needed); yields its log path."""
    with _running_worker(redis_url, tmp_path / "celery-worker.log", {}, "test") as worker:
        yield worker.log


def _point_celery_app(app: Any, *, broker_url: str, result_backend: str) -> None:
    """Re-point this process's Celery app. Celery caches its broker pool and result backend
    on first use (an eager `apply` in an earlier test is enough), and a changed conf alone
    does not reach those caches, so they are dropped here too."""
    app.conf.update(broker_url=broker_url, result_backend=result_backend)
    app._after_fork()  # drops the broker connection pool and the producer pool
    app._backend_cache = None
    if hasattr(app._local, "backend"):
        del app._local.backend


def redis_database_empty(redis_url: str, number: int) -> Iterator[str]:
    """The URL of database `number` of the test Redis, flushed before and after (for a module
    whose tests read every message a broker holds: overriding its `redis_url` with this
    points its workers and its `broker` there)."""
    from urllib.parse import urlsplit, urlunsplit

    import redis

    url = urlunsplit(urlsplit(redis_url)._replace(path=f"/{number}"))
    with redis.Redis.from_url(url) as client:
        client.flushdb()
        yield url
        client.flushdb()


@pytest.fixture
def broker(redis_url: str) -> Iterator[Any]:
    """The test Redis (a redis.Redis client), with this process's Celery app sending to it."""
    import redis

    from evalserver.celery import app

    saved = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend}
    _point_celery_app(app, broker_url=redis_url, result_backend=redis_url)
    try:
        yield redis.Redis.from_url(redis_url)
    finally:
        _point_celery_app(app, **saved)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The tasks sent, as (name, job id), instead of reaching a broker."""
    from leaderboard import queue

    messages: list[tuple[str, int]] = []
    monkeypatch.setattr(queue, "task_send",
                        lambda name, job_id, **_: messages.append((name, job_id)))
    return messages


@pytest.fixture(autouse=True)
def _project_celery_app_current() -> None:
    """Each test sends its tasks through the project's Celery app: a `Celery(...)` made by an
    earlier test in this process becomes the current app by default, and the web side sends by
    name through the current one (leaderboard/queue.py), so its tasks went to that app's
    broker, where no worker of the test listened."""
    from evalserver.celery import app

    app.set_current()


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Each test starts with an empty cache: rolled-back tests can reuse a benchmark's id and
    leaderboard generation, which would otherwise hit another test's cached leaderboard."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def _login_counts_clear() -> None:
    """Delete every failed-login count of the shared `throttle` cache, and the marks of
    queued significance refreshes kept there (and nothing else in that Redis: the broker's
    keys stay). No Redis there: nothing to clear."""
    import redis
    from django.core.cache import caches

    throttle = caches["throttle"]
    try:
        client = throttle._cache.get_client(write=True)  # type: ignore[attr-defined]
        for key in client.scan_iter(match=f"{throttle.key_prefix}:*", count=1000):
            client.delete(key)
    except redis.RedisError:
        pass


@pytest.fixture(autouse=True)
def _fresh_login_counts() -> Iterator[None]:
    """Each test starts with no failed logins counted: the counts live in Redis for 15
    minutes, so a test that fails many logins from 127.0.0.1 (the API fuzzer) would
    otherwise lock out the tests after it, and the next test run's too."""
    _login_counts_clear()
    yield
    _login_counts_clear()


@dataclass(frozen=True)
class WorkerProcess:
    """A running worker: `log` is its log file, `pid` its main process (the prefork pool's
    parent)."""

    log: Path
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid


@pytest.fixture
def gpu_worker_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    """Request before `scoring_worker`: its worker then serves the gpu queue too (checkpoint
    runs, the AUL audit)."""
    monkeypatch.setenv("EVALSERVER_TEST_WORKER_QUEUES", "cpu,gpu")


@pytest.fixture
def scoring_worker(scoring_worker_process: WorkerProcess) -> Path:
    """A real Celery worker (-Q cpu) that sees this test's database, media and data.

    Use with `@pytest.mark.django_db(transaction=True)`: the worker is another process, so
    it only sees committed rows. Yields the worker's log path. Extra environment for the
    worker (e.g. EVALSERVER_SCORING_DELAY_MS) can be set with `monkeypatch.setenv` before
    the fixture is requested.
    """
    return scoring_worker_process.log


@pytest.fixture
def scoring_worker_process(
    redis_url: str, catalog_settings: Settings, tmp_path: Path
) -> Iterator[WorkerProcess]:
    """`scoring_worker`, as its process too (its pid, e.g. to kill its pool child)."""
    with _running_worker(redis_url, tmp_path / "scoring-worker.log",
                         scoring_worker_env(catalog_settings), "scoring") as worker:
        yield worker


def scoring_worker_env(catalog_settings: Settings) -> dict[str, str]:
    """The environment that makes a worker process see this test's database, media and data."""
    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        database_url = f"sqlite:///{db['NAME']}"
    else:
        database_url = (f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:"
                        f"{db['PORT'] or 5432}/{db['NAME']}")
    return {
        "DJANGO_SETTINGS_MODULE": "evalserver.settings_testing",
        "DATABASE_URL": database_url,
        "MEDIA_ROOT": str(catalog_settings.MEDIA_ROOT),
        "EVALSERVER_DATA_DIR": str(catalog_settings.EVALSERVER_DATA_DIR),
        "EVALSERVER_CACHE_DIR": str(catalog_settings.EVALSERVER_CACHE_DIR),
    }


def wait_for_status(submission_id: int, statuses: tuple[str, ...], *, timeout: float = 240,
                    log: Path | None = None) -> str:
    """Poll the database until the submission reaches one of `statuses`; fail with the log.
    The deadline only bounds a hung test: a busy CI machine (two test processes, the
    topology benches and whatever else runs) can take minutes to start a worker and score."""
    from leaderboard.submissions.models import Submission

    deadline = time.monotonic() + timeout
    while True:
        status = Submission.objects.values_list("status", flat=True).get(id=submission_id)
        if status in statuses:
            return status
        if time.monotonic() > deadline:
            detail = log.read_text() if log and log.exists() else ""
            pytest.fail(f"submission {submission_id} still {status} after {timeout} s\n{detail}")
        time.sleep(0.2)


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Debian's chromium through Playwright (mark the test with tests.browser.NEEDS_CHROMIUM)."""
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():  # only under CI=true: tests.browser.NEEDS_CHROMIUM skips else
        pytest.fail(f"the browser tests need Debian's chromium at {CHROMIUM} (apt-get install "
                    "chromium); CI=true: a browser test never skips", pytrace=False)
    # Playwright's sync API keeps an event loop running in this thread; the test's own ORM
    # calls are synchronous and safe.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules with a `slow` test first, each module's tests kept together and in their
    order: pytest-xdist (`--dist loadfile`) hands out whole modules in this order, so the long
    ones start early and the short ones fill the end, instead of one long module running alone
    at the end while the other processes wait."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_modules)
