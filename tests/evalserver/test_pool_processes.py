"""A Celery worker's prefork pool processes exit with its main process: after a SIGKILL of the
main process none of them keeps running its task (evalserver/pool_processes.py). A real worker
against a real Redis.

An idle pool process ends by itself when its pipe from the dead parent closes; one in the
middle of a task did not, and ran it to the end with no parent to take its result: so the pool
processes here are busy with a long task when the worker is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from celery import Celery

from tests.conftest import redis_database_empty
from tests.helpers import PROJECT_ROOT

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; prctl is Linux's")]

CONCURRENCY = 2


@pytest.fixture
def worker_redis(redis_url: str) -> Iterator[str]:
    """Database 11 of the test Redis, empty: the worker takes no other test's task."""
    yield from redis_database_empty(redis_url, 11)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/<pid>/stat), None once it is gone or a
    zombie (dead, waiting for whichever process adopted it to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return None if fields[0] in ("Z", "X") else fields[19]


def _wait(check: Callable[[], bool], what: str, worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while not check():
        if worker.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}: not within 120 s\n{log.read_text(errors='replace')}")
        time.sleep(0.2)


def test_it_ends_every_pool_process_when_the_worker_is_killed(
    worker_redis: str, tmp_path: Path,
) -> None:
    log = tmp_path / "worker.log"
    markers = tmp_path / "busy"
    markers.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_XDIST_WORKER"}
    env["REDIS_URL"] = worker_redis
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "evalserver", "worker", "-Q", "cpu",
             "--concurrency", str(CONCURRENCY), "--include", "tests.pool_tasks",
             "--loglevel", "INFO", "--without-gossip", "--without-mingle",
             "--hostname", f"pool-{uuid.uuid4().hex[:8]}@%h"],
            cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        _wait(lambda: " ready." in log.read_text(errors="replace"), "the worker ready",
              worker, log)
        # not set as current: this process's tasks go on being sent by the project's app
        with Celery(broker=worker_redis, set_as_current=False) as client:
            for _ in range(CONCURRENCY):
                client.send_task("tests.pool_tasks.busy", args=[600, str(markers)],
                                 queue="cpu")
        # every pool process in the middle of a task
        _wait(lambda: sorted(int(p.name) for p in markers.iterdir()) == sorted(
            _children(worker.pid)), "both pool processes busy", worker, log)
        pool = {pid: _start_time(pid) for pid in _children(worker.pid)}
        assert len(pool) == CONCURRENCY

        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)

        def running() -> list[int]:  # the same processes: a reused pid has another start time
            return [pid for pid, started in pool.items() if _start_time(pid) == started]

        deadline = time.monotonic() + 30
        while running() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert running() == [], (
            f"pool processes {running()} of {sorted(pool)} outlived the killed worker\n"
            f"{log.read_text(errors='replace')}")
    finally:
        # the pool processes share the worker's session: none is left behind, fix or not
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def test_it_ends_a_pool_process_whose_parent_died_before_it_asked() -> None:
    # as in a pool process whose worker died between the fork and prctl: the process it was
    # forked by is not its parent any more, and no signal would ever come
    done = subprocess.run(
        [sys.executable, "-c", "import os; from evalserver.pool_processes import "
         "die_with_parent; die_with_parent(os.getppid() + 1); print('still running')"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (-signal.SIGKILL, ""), done.stderr
