"""Celery beat is exclusive across the deployment: of the beats started against one Redis,
exactly one holds the lock there and sends the scheduled tasks, the others wait for it; when the
holder is killed (SIGKILL, no chance to release), a waiting one takes over once the lock
expires. A beat outlives a Redis restart that loses everything, and schedules again. Real
`celery -A evalserver beat` processes against a real Redis (evalserver/beat.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings

from tests.conftest import _redis_ping, redis_database_empty
from tests.helpers import PROJECT_ROOT, free_port, process_group_stop

pytestmark = pytest.mark.slow

SWEEP_INTERVAL = 1  # seconds: several rounds of sweeps in a few seconds
# The shortest lock timeout the settings accept: a killed holder's lock expires this long
# after its last tick (the default, 30 s, only makes the test wait longer)
LOCK_TIMEOUT = 10


@pytest.fixture
def beat_redis(redis_url: str) -> Iterator[str]:
    """Database 12 of the test Redis, empty: only these beats' messages and lock are there."""
    yield from redis_database_empty(redis_url, 12)


def _beat_start(redis_url: str, workdir: Path, name: str) -> subprocess.Popen[bytes]:
    # The child uses exactly this database: without the pytest-xdist worker's name it does not
    # move to a database of its own (evalserver/settings_testing.py).
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_XDIST_WORKER"}
    env.update(REDIS_URL=redis_url, EVALSERVER_SWEEP_INTERVAL=str(SWEEP_INTERVAL),
               EVALSERVER_BEAT_LOCK_TIMEOUT=str(LOCK_TIMEOUT))
    with (workdir / f"{name}.log").open("wb") as log:
        # --schedule: a file scheduler (the default) would otherwise write one into the checkout
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "evalserver", "beat", "--loglevel", "DEBUG",
             "--schedule", str(workdir / f"{name}-schedule")],
            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)


def _senders(client: redis.Redis) -> list[int]:
    """The process id of the sender of each message on the cpu queue, oldest first (kombu's
    Redis transport pushes each message onto the list named after its queue; Celery names the
    sending process in the `origin` header: gen<pid>@<host>). None when Redis does not answer."""
    pids = []
    try:
        messages = client.lrange("cpu", 0, -1)
    except redis.ConnectionError:
        return []
    for raw in reversed(messages):
        origin = json.loads(raw)["headers"]["origin"]
        match = re.fullmatch(r"gen(\d+)@.*", origin)
        assert match, origin
        pids.append(int(match.group(1)))
    return pids


def _until(check: Callable[[], bool], what: str, timeout: float, logs: Path) -> float:
    """Poll `check` until it holds; the seconds it took. Fails with both beats' logs."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            detail = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                               for p in sorted(logs.glob("*.log")))
            pytest.fail(f"{what}: not within {timeout} s\n{detail}")
        time.sleep(0.2)
    return time.monotonic() - start


def test_it_runs_one_scheduler_and_a_second_takes_over_when_the_first_is_killed(
    beat_redis: str, tmp_path: Path,
) -> None:
    client = redis.Redis.from_url(beat_redis)
    beats = [_beat_start(beat_redis, tmp_path, name) for name in ("beat-a", "beat-b")]
    try:
        # Both started their loop (the lock holder) or reached the lock (the waiting one) ...
        _until(lambda: all("beat: Starting..." in (tmp_path / f"{name}.log").read_text()
                           for name in ("beat-a", "beat-b")),
               "both beats starting", 120, tmp_path)
        # ... then three more rounds of sweeps (four entries every SWEEP_INTERVAL) are sent
        started = len(_senders(client))
        _until(lambda: len(_senders(client)) >= started + 12, "three rounds of sweeps", 120,
               tmp_path)
        senders = set(_senders(client))
        assert len(senders) == 1, f"more than one beat sent the scheduled tasks: {senders}"
        (holder,) = [beat for beat in beats if beat.pid in senders]
        (waiting,) = [beat for beat in beats if beat is not holder]
        assert waiting.poll() is None, "the second beat stopped instead of waiting"

        # SIGKILL: the holder never releases its lock, which must expire first
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        bound = LOCK_TIMEOUT + settings.CELERY_BEAT_MAX_LOOP_INTERVAL + 30
        took = _until(lambda: waiting.pid in _senders(client), "the second beat taking over",
                      bound, tmp_path)
        print(f"the second beat took over {took:.1f} s after the first was killed "
              f"(lock timeout {LOCK_TIMEOUT} s)")
        # not before the lock could expire: until then only the killed holder could send
        assert took >= LOCK_TIMEOUT - 1 - settings.CELERY_BEAT_MAX_LOOP_INTERVAL, took
        assert waiting.poll() is None
    finally:
        for beat in beats:
            process_group_stop(beat)


def _redis_start(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    """A redis-server of this test's own, keeping nothing on disk (as scripts/serve.sh's)."""
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    _until(lambda: _redis_ping(f"redis://127.0.0.1:{port}/0"), "redis-server answering", 30,
           workdir)
    return process


def test_it_keeps_scheduling_after_redis_restarts_empty(tmp_path: Path) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    server = _redis_start(port, tmp_path)
    beat = _beat_start(url, tmp_path, "beat")
    try:
        client = redis.Redis.from_url(url)
        _until(lambda: beat.pid in _senders(client), "the beat sending", 120, tmp_path)

        # Redis stopped (its messages, the lock and the schedule gone with it) until the beat
        # has found it not answering, then started again, empty
        process_group_stop(server)
        log = tmp_path / "beat.log"
        _until(lambda: beat.poll() is not None or "Redis did not answer" in log.read_text(),
               "the beat finding Redis gone", 60, tmp_path)
        assert beat.poll() is None, f"the beat ended with Redis gone\n{log.read_text()[-3000:]}"
        server = _redis_start(port, tmp_path)
        bound = LOCK_TIMEOUT + settings.CELERY_BEAT_MAX_LOOP_INTERVAL + 30
        _until(lambda: beat.pid in _senders(client), "the beat sending again", bound, tmp_path)
        assert beat.poll() is None
    finally:
        process_group_stop(beat)
        process_group_stop(server)
