"""The kills of the chaos soak (bench/chaos.py), each on the topology of
tests/deploy/topology.py, and their seeded schedule:

- gunicorn worker: SIGKILL to one of gunicorn's workers, one serving a request when one does
  within 10 s (gunicorn's arbiter starts another);
- pool process: SIGKILL to a worker host's pool process, while it runs a scoring task when it
  does within 10 s (its worker starts another, and puts the message back);
- worker host: SIGKILL to every process of a worker host, while it runs a scoring task when it
  does within 10 s, started again as its supervisor would (the sweep queues its task again
  after the 60 s window);
- beat: SIGKILL, started again (it waits for its own stale lock in Redis, up to about 35 s);
- redis: SIGKILL to redis-server, started again on the same address and dir (it reloads its
  append-only file);
- database (once): PostgreSQL stopped in immediate mode (every server process killed, as a
  crash) and started again DATABASE_DOWN_S later (crash recovery), so that uploads meet it.

Each returns what it found (e.g. whether the process it killed was busy).
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from collections.abc import Callable

from tests.deploy.processes import command_line_holds, established_connections, forked_children
from tests.deploy.topology import WEB_PORT, Cluster

WORKERS = ("worker-a", "worker-b")
TASK = r"Task leaderboard\.tasks\.cpu\.score_submission\[([0-9a-f-]+)\]"
RECEIVED = re.compile(TASK + r" received")
ENDED = re.compile(TASK + r" (?:succeeded|failed|raised|retry)")
# as long as a supervisor takes to notice and start it again; the uploads meanwhile are
# refused (503, in the error shape) and sent again
DATABASE_DOWN_S = 5.0


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def fault_gunicorn(cluster: Cluster, rng: random.Random) -> str:
    deadline = time.monotonic() + 10
    while True:
        workers = forked_children(cluster.pids("web"), b"gunicorn")
        serving = [pid for pid in workers if established_connections(pid, WEB_PORT)]
        if serving or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if not workers:
        raise RuntimeError("no gunicorn worker to kill")
    pid = rng.choice(serving or workers)
    kill(pid)
    return f"pid {pid}, {'serving a request' if serving else 'idle'}"


def scoring_now(cluster: Cluster, role: str) -> bool:
    """Whether the host's pool process runs a scoring task: one its log says the current pool
    process received (after the worker's last start and its last pool process killed) and has
    not ended, and whose claim the database shows."""
    log = cluster.log(f"{role}.log")
    log = log[log.rfind(f"cpu@{role} ready."):]
    log = log[max(0, log.rfind("exited with 'signal 9")):]
    running = set(RECEIVED.findall(log)) - set(ENDED.findall(log))
    if not running:
        return False
    try:
        claims = {claim for (claim,) in cluster.sql(
            "SELECT claimed_by FROM leaderboard_submission WHERE status = 'running'")}
    except Exception:  # the database restarting: not now
        return False
    return bool(running & claims)


def wait_scoring(cluster: Cluster, role: str) -> bool:
    """Until the host runs a scoring task (True), for up to 10 s (then False)."""
    deadline = time.monotonic() + 10
    while not scoring_now(cluster, role):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def fault_pool(cluster: Cluster, rng: random.Random) -> str:
    role = rng.choice(WORKERS)
    busy = wait_scoring(cluster, role)
    pools = forked_children(cluster.pids(role), b"celery")
    if not pools:
        raise RuntimeError(f"{role} has no pool process to kill")
    for pid in pools:
        kill(pid)
    return f"{role}, {'scoring' if busy else 'idle'}"


def fault_worker_host(cluster: Cluster, rng: random.Random) -> str:
    role = rng.choice(WORKERS)
    busy = wait_scoring(cluster, role)
    cluster.host_kill(role)
    cluster.worker_start(role)
    return f"{role}, {'scoring' if busy else 'idle'}; ready again"


def fault_beat(cluster: Cluster, rng: random.Random) -> str:
    beats = [pid for pid in cluster.pids("web") if command_line_holds(pid, b"celery", b"beat")]
    if not beats:
        raise RuntimeError("no beat to kill")
    for pid in beats:
        kill(pid)
    deadline = time.monotonic() + 10
    while any(command_line_holds(pid, b"celery", b"beat") for pid in beats):
        if time.monotonic() > deadline:
            raise RuntimeError(f"beat {beats} survives SIGKILL")
        time.sleep(0.05)
    cluster.beat()
    return f"pid {beats[0]}"


def fault_redis(cluster: Cluster, rng: random.Random) -> str:
    cluster.host_kill("queue")
    cluster.queue()
    return "answering again"


def fault_database(cluster: Cluster, rng: random.Random) -> str:
    cluster.database_stop("immediate")
    time.sleep(DATABASE_DOWN_S)
    cluster.database_start()
    return "answering again"


FAULTS: dict[str, tuple[str, Callable[[Cluster, random.Random], str]]] = {
    "gunicorn": ("gunicorn worker SIGKILL", fault_gunicorn),
    "pool": ("pool process SIGKILL", fault_pool),
    "worker-host": ("whole worker SIGKILL, restarted", fault_worker_host),
    "beat": ("beat SIGKILL, restarted", fault_beat),
    "redis": ("redis-server SIGKILL, restarted (AOF)", fault_redis),
    "database": ("PostgreSQL crash, restarted 5 s later", fault_database),
}


def schedule(rng: random.Random, count: int,
             window: tuple[float, float]) -> list[tuple[float, str]]:
    """`count` faults at random times in the window (seconds): every kind once (the database
    only once), the others drawn."""
    kinds = list(FAULTS)
    kinds += [rng.choice([k for k in FAULTS if k != "database"])
              for _ in range(count - len(kinds))]
    rng.shuffle(kinds)
    return list(zip(sorted(rng.uniform(*window) for _ in kinds), kinds, strict=True))
