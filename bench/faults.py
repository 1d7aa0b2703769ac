"""Faults in the production topology: submissions sent, scored exactly once, lost, scored twice,
and the time to recover, for a worker killed mid-task, Redis restarted without persistence and
PostgreSQL stopped for 10 s.

    python bench/faults.py                     # the three faults, 40 uploads each
    python bench/faults.py --quick             # Redis restarted, 10 uploads (what CI runs)
    python bench/faults.py --faults worker-host --uploads 20

The topology of tests/deploy/topology.py (needs root): PostgreSQL, Redis (no persistence, as
the throwaway ones), gunicorn + Celery beat, two worker hosts of one pool process each, with
the default settings (sweep every 15 s, 60 s window) but for EVALSERVER_SCORING_DELAY_MS=1500:
every scoring task sleeps 1.5 s after its claim, so that a fault finds tasks mid-run. Per
fault, a client uploads real CIFAR-10 prediction files (five published models, cycled) through
the web host's API, one every 1.5 s, and retries an upload the server refused (as a client
does) under the same model name; a third of the way in, the fault:

- worker: SIGKILL to the pool process of worker-a while it runs a task (its worker puts the
  message back: CELERY_TASK_REJECT_ON_WORKER_LOST);
- redis: Redis stopped (SIGTERM; it saves nothing) and started again 3 s later, empty:
  waiting and delivered messages are gone, uploads meanwhile lose theirs;
- database: PostgreSQL stopped (fast shutdown) and started again 10 s later;
- worker-host (not run by default): SIGKILL to every process of worker-a, restarted at once
  (its message stays unacknowledged in Redis for the visibility timeout; the sweep finds that
  no live worker holds the task, past the 60 s window, and queues it again).

Figures, counted from the database (what the claims, attempts and Score rows record; counted
by bench/submission_counts.py, as bench/chaos.py counts), never from log lines:
- sent: uploads the server accepted (each model name stored once);
- scored exactly once: status scored, its claim held by a task (the one that wrote its
  result: results are only written by the claim holder, leaderboard/jobs/), one
  Score row on each of the five CIFAR-10 label sets, and none of them written again after
  the submission was scored;
- lost: not scored 300 s after the fault (600 s after the worker-host one), nor failed;
- twice: a submission with a Score row written after it was scored (a scoring that ran to
  completion a second time), or a model name stored twice (an upload the server kept twice);
- restarted: submissions whose attempts say they were started more than once;
- recovery: from the fault's end (the kill; Redis or PostgreSQL answering again) until
  every submission sent by then is scored (the database's `scored` times).
The workers' "succeeded: 'scored'" log lines are counted as a cross-check and reported, not
judged: a loaded machine may write them late.
Goal (issue 14): 0 lost, 0 twice, none failed, recovery under 90 s. Exit status 1 when a
count misses it (and, under CI=true, when the machine cannot build namespaces); a recovery
over the goal is reported, and fails only the full run: a loaded CI machine slows the sweep
that recovery waits for, and CI judges no timing.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "clients" / "python"))

from bench.cluster import MODELS, data_dir, model_files  # noqa: E402
from bench.submission_counts import submission_counts, wait_scored  # noqa: E402
from evalserver_client.api import Api, ClientError  # noqa: E402
from tests.deploy.processes import forked_children  # noqa: E402
from tests.deploy.topology import Cluster, unavailable_reason  # noqa: E402

USERNAME, PASSWORD = "faults", "a-long-faults-password-5"
ENV = {"EVALSERVER_SCORING_DELAY_MS": "1500"}
GOAL_RECOVERY_S = 90.0
UPLOAD_EVERY_S = 1.5
TASK = r"Task leaderboard\.tasks\.cpu\.score_submission\[([0-9a-f-]+)\]"
RECEIVED = re.compile(TASK + r" received")
SCORED = re.compile(TASK + r" succeeded in [0-9.e-]+s: 'scored'")
SKIPPED = re.compile(TASK + r" succeeded in [0-9.e-]+s: 'skipped'")
LOGS = ("worker-a.log", "worker-b.log")


@dataclass
class Batch:
    """One fault's uploads: model name -> submission id."""

    fault: str
    sent: dict[str, int] = field(default_factory=dict)
    refused: int = 0  # answers that were not 201 (retried)
    refused_last: int = -1  # the upload refused last
    done: threading.Event = field(default_factory=threading.Event)


def upload_all(cluster: Cluster, api: Api, batch: Batch, count: int) -> None:
    """The client: `count` uploads, one every UPLOAD_EVERY_S, each retried until accepted."""
    try:
        for i in range(count):
            started = time.monotonic()
            model = MODELS[i % len(MODELS)]
            name = f"{model} {batch.fault} {i}"
            while True:
                try:
                    answer = cluster.in_client(
                        api.upload, "/api/submissions/",
                        {"benchmark": "cifar10", "model_name": name}, model_files(model))
                    break
                except ClientError as exc:
                    if batch.refused_last != i:
                        print(f"    upload {i} refused ({exc}); sent again every second",
                              flush=True)
                    batch.refused, batch.refused_last = batch.refused + 1, i
                    time.sleep(1)
            batch.sent[name] = int(answer["id"])
            time.sleep(max(0.0, UPLOAD_EVERY_S - (time.monotonic() - started)))
    finally:
        batch.done.set()


def pool_processes(cluster: Cluster, role: str) -> list[int]:
    """The prefork pool processes of a worker host: celery processes whose parent is one."""
    return forked_children(cluster.pids(role), b"celery")


def running_on(cluster: Cluster, role: str) -> bool:
    """Whether a submission is claimed by a task that this host received and has not ended."""
    log = cluster.log(f"{role}.log")
    in_flight = set(RECEIVED.findall(log)) - set(SCORED.findall(log)) - set(SKIPPED.findall(log))
    claims = {claim for (claim,) in cluster.sql(
        "SELECT claimed_by FROM leaderboard_submission WHERE status = 'running'")}
    return bool(in_flight & claims)


def fault_worker(cluster: Cluster) -> None:
    deadline = time.monotonic() + 30
    while not running_on(cluster, "worker-a"):
        if time.monotonic() > deadline:
            raise RuntimeError("worker-a ran no task to kill")
        time.sleep(0.05)
    [pool] = pool_processes(cluster, "worker-a")
    os.kill(pool, signal.SIGKILL)


def fault_worker_host(cluster: Cluster) -> None:
    deadline = time.monotonic() + 30
    while not running_on(cluster, "worker-a"):
        if time.monotonic() > deadline:
            raise RuntimeError("worker-a ran no task to kill")
        time.sleep(0.05)
    cluster.host_kill("worker-a")
    ready = cluster.log("worker-a.log").count("cpu@worker-a ready.")
    cluster.spawn("worker-a", [sys.executable, "-m", "celery", "-A", "evalserver", "worker",
                               "-Q", "cpu", "--hostname", "cpu@%h", "--concurrency", "1",
                               "--loglevel", "INFO"], "worker-a.log")
    while cluster.log("worker-a.log").count("cpu@worker-a ready.") == ready:
        time.sleep(0.1)


def fault_redis(cluster: Cluster) -> None:
    cluster.host_stop("queue")
    time.sleep(3)
    cluster.queue()


def fault_database(cluster: Cluster) -> None:
    cluster.database_stop()
    time.sleep(10)
    cluster.database_start()


# name: (label, the fault, seconds to wait after it for every submission to be scored)
FAULTS: dict[str, tuple[str, Callable[[Cluster], None], float]] = {
    "worker": ("worker pool process SIGKILL mid-task", fault_worker, 300),
    "redis": ("Redis restarted, 3 s down, no persistence", fault_redis, 300),
    "database": ("PostgreSQL stopped for 10 s", fault_database, 300),
    "worker-host": ("whole worker SIGKILL, restarted", fault_worker_host, 600),
}


def measure(cluster: Cluster, api: Api, fault: str, count: int) -> dict[str, float]:
    label, inject, wait = FAULTS[fault]
    logs_before = {name: len(cluster.log(name)) for name in LOGS}
    batch = Batch(fault)
    client = threading.Thread(target=upload_all, args=(cluster, api, batch, count), daemon=True)
    client.start()
    while len(batch.sent) < max(1, count // 3) and not batch.done.is_set():
        time.sleep(0.05)
    print(f"  {label}: after {len(batch.sent)} uploads", flush=True)
    fault_started = time.monotonic()
    inject(cluster)
    fault_ended, fault_ended_at = time.monotonic(), time.time()
    sent_by_end = set(batch.sent.values())
    client.join()
    ids = set(batch.sent.values())
    wait_scored(cluster, ids, fault_ended + wait)

    counts = submission_counts(cluster, ids, f"% {fault} %")
    # when each was made and scored, as the web and the worker recorded it (one clock here)
    made, done = counts.made, counts.done
    recovery = (max(done[i] for i in sent_by_end) - fault_ended_at
                if sent_by_end <= done.keys() else float("inf"))
    # The cross-check: the workers' log lines of scorings that finished ("'scored'"); a task
    # logs its success just after its commit, so give the last lines a moment to arrive.
    deadline = time.monotonic() + 10
    while True:
        new_logs = "".join(cluster.log(name)[logs_before[name]:] for name in LOGS)
        logged = len(SCORED.findall(new_logs))
        if logged >= len(done) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return {
        "label": label, "sent": len(ids), "once": len(counts.once),
        "lost": len(counts.lost), "failed": len(counts.failed),
        "twice": len(counts.twice), "stored_twice": len(counts.stored_twice),
        "restarted": counts.restarted,
        "skipped": len(SKIPPED.findall(new_logs)), "refused": batch.refused,
        "logged_scored": logged, "scored": len(done),
        "fault_s": fault_ended - fault_started, "recovery": max(0.0, recovery),
        "slowest": max((done[i] - made[i] for i in done), default=float("nan")),
    }


def report(figures: list[dict[str, float]]) -> None:
    print()
    print(f"  {'fault':44} {'sent':>4} {'once':>4} {'lost':>4} {'twice':>5} {'failed':>6}"
          f" {'restarted':>9} {'dup msgs':>8} {'refused':>7} {'recovery':>9} {'slowest':>8}")
    for f in figures:
        recovery = "never" if f["recovery"] == float("inf") else f"{f['recovery']:.1f} s"
        print(f"  {f['label']:44} {f['sent']:4.0f} {f['once']:4.0f} {f['lost']:4.0f}"
              f" {f['twice'] + f['stored_twice']:5.0f} {f['failed']:6.0f} {f['restarted']:9.0f}"
              f" {f['skipped']:8.0f} {f['refused']:7.0f} {recovery:>9} {f['slowest']:6.1f} s")
    print("  (twice: scorings that ran to completion twice, or a model name stored twice;"
          " restarted: submissions started more than once; dup msgs: tasks that found their"
          " submission claimed or done and skipped it; refused: uploads answered with an"
          " error and sent again; recovery: from the fault's end until every submission"
          " sent by then was scored; slowest: upload to scored)")
    for f in figures:
        # Reported, never judged: a worker that logs late, or a task that ran to completion
        # but lost its claim (it then writes nothing and logs 'skipped'), moves this count.
        agree = "agrees" if f["logged_scored"] == f["scored"] else "differs (not judged)"
        print(f"  log cross-check, {f['label']}: {f['logged_scored']:.0f} scoring tasks"
              f" logged 'scored' for {f['scored']:.0f} submissions scored: {agree}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="Redis restarted only, 10 uploads (CI)")
    parser.add_argument("--uploads", type=int, default=None, help="uploads per fault")
    parser.add_argument("--faults", default=None,
                        help=f"comma-separated, of {', '.join(FAULTS)}")
    parser.add_argument("--keep-logs", type=Path, default=None,
                        help="copy every host's log into this folder at the end")
    args = parser.parse_args()
    count = args.uploads or (10 if args.quick else 40)
    faults = (args.faults or ("redis" if args.quick else "worker,redis,database")).split(",")
    unknown = [name for name in faults if name not in FAULTS]
    if unknown:
        parser.error(f"unknown faults {unknown}; known: {', '.join(FAULTS)}")

    reason = unavailable_reason()
    if reason is not None:
        print(f"faults bench: not run: {reason}")
        return 1 if os.environ.get("CI") == "true" else 0

    cluster = Cluster(data_dir=data_dir(), workers=("worker-a", "worker-b"), env=ENV)
    figures = []
    try:
        started = time.monotonic()
        cluster.start(benchmarks=("cifar10",))
        cluster.user_create(USERNAME, PASSWORD)
        token = cluster.in_client(lambda: Api(cluster.web_url, None).request(
            "POST", "/api/auth/token/", form={"username": USERNAME, "password": PASSWORD},
            auth=False))["token"]
        api = Api(cluster.web_url, token)
        print(f"faults bench: {count} CIFAR-10 uploads per fault, one every {UPLOAD_EVERY_S}"
              f" s; two worker hosts of one process, scoring delayed 1.5 s; default sweep"
              f" settings; topology up in {time.monotonic() - started:.1f} s", flush=True)
        for fault in faults:
            figures.append(measure(cluster, api, fault, count))
    finally:
        cluster.close(keep_logs_in=args.keep_logs)
    report(figures)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"  machine: {os.cpu_count()} cores, load average (1, 5, 15 min) {load}")
    missed = [f["label"] for f in figures
              if f["lost"] or f["failed"] or f["twice"] or f["stored_twice"]
              or f["once"] != f["sent"]]
    slow = [f["label"] for f in figures if f["recovery"] > GOAL_RECOVERY_S]
    if slow:
        print(f"recovery over the goal of {GOAL_RECOVERY_S:.0f} s: " + "; ".join(
            str(label) for label in slow) + (" (reported; --quick judges the counts only)"
                                             if args.quick else ""))
        if not args.quick:
            missed += slow
    if missed:
        print(f"FAILED (goal: 0 lost, 0 twice, none failed, every one scored once"
              f"{'' if args.quick else f', recovery under {GOAL_RECOVERY_S:.0f} s'}): "
              + "; ".join(str(label) for label in missed))
    return 1 if missed else 0

if __name__ == "__main__":
    sys.exit(main())
