"""A worker whose Redis is killed (SIGKILL) while it holds unacknowledged tasks reconnects when
Redis is back on the same port, instead of exiting with "Unrecoverable error:
AttributeError(\"'NoneType' object has no attribute 'hostname'\")" (evalserver/broker_guard.py)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from kombu import Connection

from evalserver.celery import app
from tests.conftest import _running_worker
from tests.helpers import free_port, process_group_stop

HELD = 5  # tasks the worker holds, unacknowledged, when Redis is killed


class RedisServer:
    """A redis-server with its append-only file in `directory`, restartable on its port."""

    def __init__(self, directory: Path) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            pytest.fail("redis-server is not installed (apt-get install redis-server)",
                        pytrace=False)
        self.executable = executable
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        _poll(self.answers, 30, "redis-server did not start")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30)

    def answers(self) -> bool:
        try:
            with self.client() as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def held(self) -> int:
        """How many delivered messages are unacknowledged."""
        with self.client() as client:
            return int(client.hlen("unacked"))

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=1)


def _poll(condition: Callable[[], bool], timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(message, pytrace=False)
        time.sleep(0.2)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    (tmp_path / "redis").mkdir()
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        if server.process is not None:
            process_group_stop(server.process)


def _pong(server: RedisServer, timeout: float) -> bool:
    """Whether a ping sent now is answered within `timeout` s; its result is read from Redis
    itself, not through this process's result backend, which may still be reconnecting."""
    try:
        task_id = app.send_task("leaderboard.tasks.cpu.ping").id
    except Exception:  # noqa: BLE001 - the broker is not back yet: not answered
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with server.client() as client:
                meta = client.get(f"celery-task-meta-{task_id}")
        except redis.RedisError:
            meta = None
        if meta is not None and b'"pong"' in meta:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_it_keeps_a_busy_worker_alive_and_consuming_after_redis_is_killed(
        redis_server: RedisServer, tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    with _running_worker(redis_server.url, log, {}, "reconnect") as worker:
        # Started: it answers a ping (generous: a slow machine takes long to import it).
        _poll(lambda: _pong(redis_server, 5), 120,
              "the worker never answered a ping:\n" + (log.read_text() if log.exists() else ""))
        # Busy: it holds tasks it has not acknowledged (due in an hour, held until then).
        for _ in range(HELD):
            app.send_task("leaderboard.tasks.cpu.ping", countdown=3600)
        _poll(lambda: redis_server.held() >= HELD, 60,
              "the worker did not take the tasks due later:\n" + log.read_text())

        redis_server.kill()
        _poll(lambda: b"Connection to broker lost" in log.read_bytes(), 60,
              "the worker did not notice that Redis was gone:\n" + log.read_text())
        time.sleep(2)
        redis_server.start()

        deadline = time.monotonic() + 180
        while not _pong(redis_server, 5):
            if worker.process.poll() is not None:
                pytest.fail(f"the worker exited ({worker.process.returncode}) after Redis was "
                            f"killed:\n{log.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail("the worker answers no ping since Redis is back:\n"
                            + log.read_text())
        assert worker.process.poll() is None
        assert b"Unrecoverable error" not in log.read_bytes()


def test_it_makes_a_channel_whose_connection_was_collected_raise_a_connection_error(
        redis_url: str) -> None:
    connection = Connection(redis_url)
    channel: Any = connection.default_channel
    connection.collect()  # what the worker does first when its broker connection breaks

    with pytest.raises(redis.exceptions.ConnectionError,
                       match="the broker connection of this channel was closed"):
        channel._connparams()
    assert isinstance(redis.exceptions.ConnectionError(), connection.connection_errors)


def test_it_retries_the_broker_connection_for_as_long_as_it_takes() -> None:
    assert app.conf.broker_connection_retry is True
    assert app.conf.broker_connection_max_retries is None
