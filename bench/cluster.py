"""Submissions scored per second by one and by two worker hosts, in the production topology.

    python bench/cluster.py            # 300 CIFAR-10 uploads per run
    python bench/cluster.py --quick    # 30 (what CI runs, with --s3)
    python bench/cluster.py --s3       # the same, then again with no shared disk

The topology of tests/deploy/topology.py (needs root): PostgreSQL, Redis (password), gunicorn
+ beat and the worker hosts each in a network namespace, talking TCP over a bridge; cifar10
loaded. Each worker host runs `celery worker -Q cpu --concurrency 1` (one core's worth;
`--concurrency N`: N processes, to see whether a run waits or is bound by the cores).
Per run: the worker hosts are frozen (SIGSTOP on every process), N submissions are uploaded
through the web host's API (the real published predictions of a few CIFAR-10 models, cycled,
each under its own model name), then every host is resumed at once on the full queue. Timed:
from the resume to the last `scored` time in the database. CPU: utime + stime of every process
on the worker hosts (children reaped included: /proc/<pid>/stat) over the same span, per
submission; the database and queue hosts' share (and the object store's) is printed beside
it. Run 1 has worker-a only; run 2 adds worker-b. On a 2-core machine the web, database and
queue hosts share those cores, so expect little gain from the second host: the CPU per
submission says what scoring costs.

--s3: after those two runs on the shared disk, the same two runs in the topology with no shared
disk (tests/deploy/object_store.py: the files in moto's S3 server on a host of its own, each
host its own media and cache folders), and the two-host throughputs side by side: no shared
disk / shared disk (issue 22's figure: within 20%).

Exit status: 0 when every submission of every run was scored; 1 otherwise (and, under
CI=true, when the machine cannot build namespaces). Throughput only prints (machine-bound).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "clients" / "python"))

from evalserver_client.api import Api  # noqa: E402
from tests.deploy.object_store import ObjectStoreCluster  # noqa: E402
from tests.deploy.topology import Cluster, unavailable_reason  # noqa: E402

PREDICTIONS = Path("cifar10") / "model_predictions"
MODELS = ("densenet_BC_100_12", "resnet_basic_110", "resnet_preact_basic_110", "vgg16_keras",
          "wrn_28_10")
USERNAME, PASSWORD = "bench", "a-long-bench-password-3"


def data_dir() -> Path:
    return Path(os.environ.get("EVALSERVER_DATA_DIR") or ROOT.parent / "shared" / "data")


def model_files(model: str) -> dict[str, Path]:
    base = data_dir() / PREDICTIONS
    return {"cifar10-test": base / "original_predictions" / f"{model}_predictions.json",
            "cifar10.1-v4": base / "v4_predictions" / f"{model}_predictions.json",
            "cifar10.1-v6": base / "v6_predictions" / f"{model}_predictions.json"}


def signal_hosts(cluster: Cluster, roles: tuple[str, ...], sig: signal.Signals) -> None:
    for role in roles:
        for pid in cluster.pids(role):
            os.kill(pid, sig)


def upload(cluster: Cluster, api: Api, count: int, run: int) -> tuple[list[int], float]:
    """N submissions through the web host; their ids and the seconds it took."""
    started = time.monotonic()
    ids = []
    for i in range(count):
        model = MODELS[i % len(MODELS)]
        answer = cluster.in_client(api.upload, "/api/submissions/",
                                   {"benchmark": "cifar10", "model_name": f"{model} run{run}-{i}"},
                                   model_files(model))
        ids.append(int(answer["id"]))
    return ids, time.monotonic() - started


def measure(cluster: Cluster, api: Api, roles: tuple[str, ...], count: int,
            run: int) -> dict[str, float]:
    signal_hosts(cluster, roles, signal.SIGSTOP)  # frozen, so every host starts on a full queue
    ids, upload_s = upload(cluster, api, count, run)
    others = ("db", "queue", *(("objects",) if "objects" in cluster.hosts else ()))
    cpu_before = {role: cluster.cpu_seconds(role) for role in (*roles, *others)}
    resumed = time.time()
    signal_hosts(cluster, roles, signal.SIGCONT)
    # A bound for "never scored", not a figure: generous, since a loaded CI machine is slow.
    deadline = time.monotonic() + 300 + count
    while True:
        [(done, failed, last)] = cluster.sql(
            "SELECT count(*) FILTER (WHERE status = 'scored'),"
            " count(*) FILTER (WHERE status = 'failed'), max(finished_at)"
            " FROM leaderboard_submission WHERE id = ANY(%s)", (ids,))
        if done + failed == count or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    cpu = {role: cluster.cpu_seconds(role) - cpu_before[role] for role in cpu_before}
    seconds = last.timestamp() - resumed if last is not None else float("nan")
    return {"scored": done, "failed": failed, "upload_s": upload_s, "seconds": seconds,
            "per_second": done / seconds if done else 0.0,
            "worker_cpu": sum(cpu[r] for r in roles) / max(done, 1),
            "db_cpu": cpu["db"] / max(done, 1), "queue_cpu": cpu["queue"] / max(done, 1),
            "objects_cpu": cpu.get("objects", float("nan")) / max(done, 1)}


def report(hosts: int, figures: dict[str, float], count: int) -> None:
    label = f"{hosts} worker host{'s' if hosts > 1 else ' '}"
    print(f"  {label}: {figures['scored']:.0f}/{count} scored in {figures['seconds']:.2f} s"
          f" = {figures['per_second']:.1f} submissions/s; CPU per submission:"
          f" workers {figures['worker_cpu'] * 1000:.0f} ms, database"
          f" {figures['db_cpu'] * 1000:.0f} ms, queue {figures['queue_cpu'] * 1000:.1f} ms"
          + ("" if math.isnan(figures["objects_cpu"]) else
             f", object store {figures['objects_cpu'] * 1000:.0f} ms")
          + f" (uploads: {count / figures['upload_s']:.1f}/s)")


def topology_runs(cluster: Cluster, count: int, what: str) -> tuple[dict[str, float], ...]:
    """Run 1 (worker-a) and run 2 (both worker hosts) in a topology; it is removed after."""
    try:
        started = time.monotonic()
        cluster.start(benchmarks=("cifar10",), workers=("worker-a",))
        cluster.user_create(USERNAME, PASSWORD)
        token = cluster.in_client(lambda: Api(cluster.web_url, None).request(
            "POST", "/api/auth/token/", form={"username": USERNAME, "password": PASSWORD},
            auth=False))["token"]
        api = Api(cluster.web_url, token)
        print(f"{what}: topology up in {time.monotonic() - started:.1f} s")
        one = measure(cluster, api, ("worker-a",), count, 1)
        report(1, one, count)
        cluster.worker_start("worker-b")
        two = measure(cluster, api, ("worker-a", "worker-b"), count, 2)
        report(2, two, count)
    finally:
        cluster.close()
    if one["per_second"] and two["per_second"]:
        print(f"  two hosts / one host: {two['per_second'] / one['per_second']:.2f}x")
    return one, two


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 uploads per run (CI)")
    parser.add_argument("--uploads", type=int, default=None, help="uploads per run")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="worker processes per worker host (default 1)")
    parser.add_argument("--s3", action="store_true",
                        help="then the same with no shared disk (an S3 store on its own host)")
    args = parser.parse_args()
    count = args.uploads or (30 if args.quick else 300)
    if count < 1 or args.concurrency < 1:
        parser.error("--uploads and --concurrency must be at least 1")

    reason = unavailable_reason()
    if reason is not None:
        print(f"cluster bench: not run: {reason}")
        return 1 if os.environ.get("CI") == "true" else 0

    print(f"cluster bench: {count} CIFAR-10 uploads per run ({len(MODELS)} real models'"
          f" files, cycled), worker hosts of {args.concurrency} process"
          f"{'es' if args.concurrency > 1 else ''} each")
    workers = ("worker-a", "worker-b")
    topology = {"data_dir": data_dir(), "workers": workers,
                "worker_concurrency": args.concurrency}  # both topologies' arguments
    runs = list(topology_runs(Cluster(**topology), count, "shared disk"))
    if args.s3:
        runs += topology_runs(ObjectStoreCluster(**topology), count,
                              "no shared disk (S3 store on its own host)")
        shared, s3 = runs[1]["per_second"], runs[3]["per_second"]
        if shared and s3:
            print(f"  two worker hosts, no shared disk / shared disk: {s3:.1f} / {shared:.1f}"
                  f" submissions/s = {s3 / shared:.2f}")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"  machine: {os.cpu_count()} cores, load average (1, 5, 15 min) {load}")
    ok = all(run["scored"] == count for run in runs)
    if not ok:
        print("FAILED: not every submission was scored")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
