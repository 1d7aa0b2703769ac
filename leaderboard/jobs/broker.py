"""What the broker and the live workers hold, asked by the sweep (`leaderboard.jobs.sweep`)
and the readiness check (`/readyz`, evalserver/health.py): `broker_tasks_read` tells which
jobs' messages a Redis broker still holds, `worker_tasks_held` which tasks the live workers
hold, `worker_queues_answering` which queues have a live worker.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
from celery import current_app
from celery.app.control import Inspect
from kombu.exceptions import OperationalError as KombuOperationalError
from kombu.transport.redis import Channel as RedisChannel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrokerTasks:
    """The task messages a Redis broker holds: waiting on a queue, or delivered to a worker
    and not yet acknowledged."""

    jobs: frozenset[tuple[str, int]]  # (task name, job id) of every message
    task_ids: frozenset[str]  # the Celery task id of every message
    # The task ids of the messages delivered to a worker and not yet acknowledged.
    delivered: frozenset[str] = frozenset()


def broker_tasks_read() -> BrokerTasks | None:
    """Every task message in the broker, or None when it cannot be read (unreachable, or not
    a Redis broker). kombu's Redis transport keeps a queue's waiting messages in a list named
    after the queue (one more list per priority step: "cpu\\x06\\x163"; this project sends no
    priorities) and the delivered, unacknowledged ones (tasks are acknowledged late) in the
    `unacked` hash, as [message, exchange, routing key]. The lists are read before the hash:
    a message moves from one to the other, so it is seen in one of them but for the instant
    between a worker's pop and its write to the hash."""
    conf = current_app.conf
    options = conf.broker_transport_options or {}
    url = str(conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None  # another transport (or Sentinel): the sweep's long cutoffs apply
    prefix = options.get("global_keyprefix", "")
    lists = [name for names in broker_queue_lists().values() for name in names]
    unacked = prefix + options.get("unacked_key", RedisChannel.unacked_key)
    try:
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        with client:
            with client.pipeline(transaction=False) as pipe:
                for name in lists:
                    pipe.lrange(name, 0, -1)
                waiting = pipe.execute()
            delivered = client.hvals(unacked)
    except (redis.RedisError, OSError) as exc:
        log.warning("the broker's messages cannot be read (%s): the sweep waits for its "
                    "long cutoffs", exc)
        return None
    messages = [_loads(raw) for listed in waiting for raw in listed]
    unacked_messages = [_loads(raw, delivered=True) for raw in delivered]
    tasks = _tasks_of(message for message in messages + unacked_messages
                      if isinstance(message, dict))
    held = _tasks_of(message for message in unacked_messages if isinstance(message, dict))
    return BrokerTasks(jobs=tasks.jobs, task_ids=tasks.task_ids, delivered=held.task_ids)


def broker_queue_lists() -> dict[str, list[str]]:
    """The Redis lists of each declared queue's waiting messages (one per priority step),
    by queue name."""
    conf = current_app.conf
    options = conf.broker_transport_options or {}
    prefix = options.get("global_keyprefix", "")
    sep = options.get("sep", RedisChannel.sep)
    steps = options.get("priority_steps", RedisChannel.priority_steps)
    queues = {queue.name for queue in conf.task_queues or ()} or {conf.task_default_queue}
    return {queue: [prefix + (f"{queue}{sep}{step}" if step else queue)
                    for step in sorted(set(steps) | {0})] for queue in sorted(queues)}


def broker_queue_depths(*, timeout: float = 1.0) -> dict[str, int] | None:
    """How many messages wait on each declared queue (the lengths of its lists; not those
    delivered to a worker, nor a retry's countdown, which a worker holds); None when the
    broker cannot be read or is not Redis."""
    url = str(current_app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    lists = broker_queue_lists()
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        with client, client.pipeline(transaction=False) as pipe:
            for names in lists.values():
                for name in names:
                    pipe.llen(name)
            lengths = iter(pipe.execute())
    except (redis.RedisError, OSError):
        return None
    return {queue: sum(next(lengths) for _ in names) for queue, names in lists.items()}


def worker_tasks_held(task_ids: Iterable[str], *, timeout: float = 1.0) -> frozenset[str] | None:
    """Which of these tasks a live worker holds (running, prefetched, or waiting for its retry
    countdown), asked through Celery's remote control: one broadcast of `query_task`, whose
    replies (the ids each worker knows among those asked) are collected for `timeout` s.
    Empty when no worker answers (none is alive); None when the question cannot be sent.

    A worker whose whole process was killed (SIGKILL, its machine gone) leaves its message in
    the broker's `unacked` hash for the visibility timeout (hours), so only this tells the
    sweep that nothing runs it. A prefork worker's main process answers while its pool
    processes work, so a busy worker still answers."""
    asked = sorted(set(task_ids))
    if not asked:
        return frozenset()
    try:
        with _inspector(timeout=timeout) as inspect:
            replies = inspect.query_task(*asked)
    except (KombuOperationalError, redis.RedisError, OSError) as exc:
        log.warning("the workers cannot be asked which tasks they hold (%s): the sweep "
                    "waits for its long cutoffs", exc)
        return None
    held: set[str] = set()
    for reply in (replies or {}).values():  # {hostname: {task id: [state, info]}}
        if isinstance(reply, dict):
            held.update(task_id for task_id in reply if isinstance(task_id, str))
    return frozenset(held) & frozenset(asked)


def worker_queues_answering(*, timeout: float = 1.0) -> frozenset[str] | None:
    """The queues consumed by the workers that answer within `timeout` s, asked like
    `worker_tasks_held`: one broadcast of `active_queues`. Empty when no worker answers; None
    when the question cannot be sent."""
    try:
        with _inspector(timeout=timeout) as inspect:
            replies = inspect.active_queues()
    except (KombuOperationalError, redis.RedisError, OSError) as exc:
        log.warning("the workers cannot be asked which queues they consume (%s)", exc)
        return None
    queues: set[str] = set()
    for reply in (replies or {}).values():  # {hostname: [{"name": queue, ...}, ...]}
        if isinstance(reply, list):
            queues.update(queue["name"] for queue in reply
                          if isinstance(queue, dict) and isinstance(queue.get("name"), str))
    return frozenset(queues)


@contextmanager
def _inspector(*, timeout: float) -> Iterator[Inspect]:
    """Celery's remote control for one question, on a broker connection of its own, closed
    after it.

    Not one from the app's pool: the question's reply consumer returns with a BRPOP still
    outstanding on its socket, and a pooled connection in that state is inherited by every
    process forked later (the re-scoring pool). Each child closes the inherited connections
    after the fork (kombu's after-fork hook) by reading that one pending answer from the
    shared socket: the first child gets it, the others wait for ever. Closing the connection
    here reads the answer once, in this process (at most the BRPOP timeout, a second)."""
    with current_app.connection_for_write() as connection:
        yield current_app.control.inspect(timeout=timeout, connection=connection)


def _loads(raw: bytes | str, *, delivered: bool = False) -> object:
    try:
        loaded = json.loads(raw)
        return loaded[0] if delivered else loaded  # delivered: [message, exchange, key]
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def _tasks_of(messages: Iterable[dict[str, Any]]) -> BrokerTasks:
    """The (task, job id) pairs and task ids of kombu messages (headers with the task's name
    and id; the body, base64 JSON, holds [args, kwargs, embed]). Anything else is skipped."""
    jobs: set[tuple[str, int]] = set()
    task_ids: set[str] = set()
    for message in messages:
        try:
            headers = message["headers"]
            body = message["body"]
            if message.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            args = json.loads(body)[0]
            name, task_id = headers["task"], headers["id"]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            continue  # not a task message of this project
        if isinstance(task_id, str):
            task_ids.add(task_id)
        if isinstance(name, str) and isinstance(args, list) and len(args) == 1 \
                and isinstance(args[0], int):
            jobs.add((name, args[0]))
    return BrokerTasks(jobs=frozenset(jobs), task_ids=frozenset(task_ids))
