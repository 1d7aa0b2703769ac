"""Requests per second and latency of the public CIFAR-10 leaderboard, JSON and HTML.

    python bench/leaderboard.py            # 1,000 submissions, 10 s of load per URL
    python bench/leaderboard.py --quick    # 100 submissions, 3 s per URL (what CI runs)

Everything is throwaway and local: a SQLite database and media folder in a temporary
directory (migrated, cifar10 loaded from the data directory), N scored public submissions
inserted with bulk_create (synthetic but valid Score rows on the latest version of every
label set: accuracy, correct, total, the Clopper-Pearson interval and the packed per-example
hits that the paired tests read), gunicorn with the project's config
(evalserver/gunicorn_conf.py: 2 gthread workers of 4 threads) on a free 127.0.0.1 port, warmed
up, then load from a second process: `wrk` (--latency) when it is installed, else a
multi-threaded keep-alive http.client loop bounded in requests and time. Each URL that answers
404 (not built yet) is reported as not available.
It also times `leaderboard_get` in this process, uncached and cached, the worker's refresh
of the stored significance (rank_ub, McNemar p: docs/metrics.md §10.3) for those submissions
(so the served board shows it), and the recompute of rank_ub for 1,000 ImageNet submissions
(synthetic hit vectors over 50,000 examples, accuracies 75-90%, correlated through a shared
per-example difficulty) through the function the worker calls (goal < 10 s on 2 cores).

Exit status: 0 when every available URL answered 200 throughout; 1 otherwise. Missing a
target only prints so (timings depend on the machine).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.scoring.families.registry import family_named  # noqa: E402

BENCHMARK = "cifar10"
# (name, path, minimum requests/s, maximum p99 in ms or None)
TARGETS = (
    ("JSON", f"/api/benchmarks/{BENCHMARK}/leaderboard/", 300.0, 50.0),
    ("HTML", f"/benchmarks/{BENCHMARK}/", 100.0, None),
)
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# -- the throwaway server -----------------------------------------------------------------------


def server_env(work: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalserver.settings",
        "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
        "MEDIA_ROOT": str(work / "media"),
        "EVALSERVER_CACHE_DIR": str(work / "compiled"),
        "SECRET_KEY": "bench-only-secret-key-" + os.urandom(16).hex(),
        "DEBUG": "false",
        # plain http on 127.0.0.1, no TLS proxy: no redirect to https (README, "Settings")
        "SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
        # A bench measures the server, not its rate limits: one address sends far more than
        # the default allowance (docs/api.md, "Rate limits").
        **{f"EVALSERVER_THROTTLE_{scope}": "none" for scope in ("ANON", "USER", "UPLOADS",
                                                                  "TOKEN")},
    }
    env.pop("EVALSERVER_MULTILABEL_FILE", None)
    return env


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)


def insert_submissions(count: int, seed: int = 0) -> None:
    """`count` scored public submissions with a Score on the latest version of each label set."""
    import numpy as np
    from django.contrib.auth.models import User
    from django.utils import timezone

    from leaderboard.catalog.models import Benchmark
    from leaderboard.catalog.selectors import label_set_versions_current
    from leaderboard.catalog.services import benchmark_leaderboard_touch
    from leaderboard.submissions.models import Score, Submission
    from leaderboard.submissions.services import hit_vectors_store
    from workers.scoring.stats import accuracy_record

    rng = np.random.default_rng(seed)
    benchmark = Benchmark.objects.get(slug=BENCHMARK)
    owners = User.objects.bulk_create(
        [User(username=f"bench-{i:03d}", password="!") for i in range(max(1, count // 20))])
    now = timezone.now()
    submissions = Submission.objects.bulk_create(
        [Submission(owner=owners[i % len(owners)], benchmark=benchmark,
                    model_name=f"bench model {i:04d}", public=True,
                    status=Submission.Status.SCORED, started=now, finished_at=now, attempts=1,
                    claimed_by="bench")
         for i in range(count)], batch_size=500)
    versions = label_set_versions_current(benchmark=benchmark)
    skill = rng.uniform(0.55, 0.97, size=count)  # one "true" accuracy per model
    scores = []
    for version in versions:
        total = int(version.summary.get("evaluated") or version.label_set.image_set.size)
        shift = rng.normal(-0.03 if family_named(version.label_set.family).gap_to_reference
                           else 0.0, 0.02,
                           size=count)
        correct = np.rint(np.clip(skill + shift, 0.05, 0.995) * total).astype(int)
        difficulty = rng.random(total)  # shared by the models, so their hits correlate
        for submission, right in zip(submissions, correct.tolist(), strict=True):
            # the `right` examples this model finds easiest: its per-example hits, stored
            # packed as scoring stores them (the leaderboard's McNemar tests read them)
            noisy = difficulty + rng.normal(0.0, 0.3, size=total)
            hits = np.zeros(total, dtype=bool)
            hits[np.argpartition(noisy, right - 1)[:right]] = True
            record: dict[str, Any] = {
                "label_set": version.label_set.slug, "image_set": version.label_set.image_set.slug,
                "family": version.label_set.family, "version_hash": version.content_hash,
                **accuracy_record(right, total),
            }
            scores.append(Score(
                submission=submission, label_set_version=version, label_set_id=version.label_set_id,
                accuracy=record["accuracy"], correct=right, total=total,
                ci_low=record["ci_low"], ci_high=record["ci_high"], record=record,
                hits_id=hit_vectors_store(hits={0: hits})[0]))
    Score.objects.bulk_create(scores, batch_size=1000)
    benchmark_leaderboard_touch(benchmark_id=benchmark.pk)


def time_refresh() -> float:
    """Seconds of the worker's refresh of the stored significance (every current version)."""
    from leaderboard.catalog.models import Benchmark
    from leaderboard.submissions.significance import board_significance_refresh

    t0 = time.perf_counter()
    board_significance_refresh(benchmark_id=Benchmark.objects.get(slug=BENCHMARK).pk)
    return time.perf_counter() - t0


def time_imagenet_rank_ub(count: int = 1000, examples: int = 50_000, seed: int = 0
                          ) -> tuple[float, int]:
    """(seconds, rows with rank_ub 1) of the full recompute the worker runs per label-set
    version (`board_significance_pruned`, 2 threads: docs/metrics.md §10.4) on `count`
    synthetic ImageNet rows in board order."""
    import numpy as np

    from workers.scoring.significance import pack_hits
    from workers.scoring.significance_pairs import board_significance_pruned

    rng = np.random.default_rng(seed)
    difficulty = rng.random(examples)
    accuracy = np.sort(rng.uniform(0.75, 0.90, size=count))[::-1]
    packed = []
    for acc in accuracy.tolist():
        right = int(round(acc * examples))
        noisy = difficulty + rng.normal(0.0, 0.3, size=examples)
        hits = np.zeros(examples, dtype=bool)
        hits[np.argpartition(noisy, right - 1)[:right]] = True
        packed.append(pack_hits(hits))
    t0 = time.perf_counter()
    bits = np.frombuffer(b"".join(packed), dtype=np.uint8).reshape(count, -1)
    result = board_significance_pruned(bits, list(range(count)),
                                       list((accuracy * examples).round() / examples), threads=2)
    seconds = time.perf_counter() - t0
    return seconds, sum(1 for ub in result.rank_ub if ub == 1)


def time_selector(repeat: int) -> tuple[float, float, int]:
    """(uncached ms, cached ms, rows): medians of `leaderboard_get` in this process."""
    from django.core.cache import cache

    from leaderboard.catalog.models import Benchmark
    from leaderboard.presentation.boards.selectors import leaderboard_get

    benchmark = Benchmark.objects.get(slug=BENCHMARK)
    uncached, cached = [], []
    rows = 0
    for _ in range(repeat):
        cache.clear()
        t0 = time.perf_counter()
        rows = len(leaderboard_get(benchmark=benchmark).rows)
        t1 = time.perf_counter()
        leaderboard_get(benchmark=benchmark)
        t2 = time.perf_counter()
        uncached.append(t1 - t0)
        cached.append(t2 - t1)
    return 1000 * sorted(uncached)[repeat // 2], 1000 * sorted(cached)[repeat // 2], rows


def get(port: int, path: str, timeout: float = 30.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def start_gunicorn(
    env: dict[str, str], port: int, log: Path, workers: int
) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "evalserver/gunicorn_conf.py", "evalserver.wsgi",
         "--bind", f"{HOST}:{port}", "--workers", str(workers), "--error-logfile", str(log)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            get(port, "/", timeout=2)
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"gunicorn did not start; its log:\n{log.read_text()}") from None
            time.sleep(0.2)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# -- load ---------------------------------------------------------------------------------------


def python_load(port: int, path: str, *, seconds: float, connections: int,
                max_requests: int) -> dict[str, Any]:
    """Keep-alive http.client clients in threads (they reconnect when the server closes)."""
    latencies: list[list[float]] = [[] for _ in range(connections)]
    statuses: list[Counter[int]] = [Counter() for _ in range(connections)]
    errors = [0] * connections
    per_thread = max(1, max_requests // connections)
    start = time.perf_counter()
    deadline = start + seconds

    def client(i: int) -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        while time.perf_counter() < deadline and len(latencies[i]) < per_thread:
            t0 = time.perf_counter()
            try:
                conn.request("GET", path, headers={"Connection": "keep-alive"})
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                errors[i] += 1
                conn.close()
                continue
            latencies[i].append(time.perf_counter() - t0)
            statuses[i][response.status] += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    every = sorted(x for chunk in latencies for x in chunk)
    status: Counter[int] = sum(statuses, Counter())

    def percentile(q: float) -> float:
        return 1000 * every[min(len(every) - 1, int(q * len(every)))] if every else float("nan")

    return {"tool": f"python http.client, {connections} connections", "requests": len(every),
            "seconds": elapsed, "rps": len(every) / elapsed, "p50_ms": percentile(0.50),
            "p99_ms": percentile(0.99), "errors": sum(errors),
            "non_200": sum(n for code, n in status.items() if code != 200)}


def _wrk_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def wrk_load(wrk: str, port: int, path: str, *, seconds: float, connections: int) -> dict[str, Any]:
    threads = max(1, min(connections, 2))
    out = subprocess.run(
        [wrk, f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency",
         "--timeout", "10s", f"http://{HOST}:{port}{path}"],
        capture_output=True, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, flags=re.M))
    non_200 = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                              r"timeout (\d+)", out)
    return {"tool": f"wrk, {threads} threads, {connections} connections", "requests": requests,
            "seconds": seconds,
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
            "p50_ms": _wrk_ms(latency["50"]), "p99_ms": _wrk_ms(latency["99"]),
            # read errors are the server closing a connection (keep-alive's end): not failures
            "errors": int(socket_errors.group(1)) + int(socket_errors.group(4))
            if socket_errors else 0,
            "non_200": int(non_200.group(1)) if non_200 else 0}


def load_main(args: argparse.Namespace) -> None:
    """The second process: send the load, print one JSON line of results."""
    wrk = shutil.which("wrk") if args.tool in ("auto", "wrk") else None
    if args.tool == "wrk" and wrk is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    if wrk:
        result = wrk_load(wrk, args.port, args.path, seconds=args.seconds,
                          connections=args.connections)
    else:
        result = python_load(args.port, args.path, seconds=args.seconds,
                             connections=args.connections, max_requests=args.max_requests)
    print(json.dumps(result))


# -- main ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="100 submissions and 3 s of load per URL (CI)")
    parser.add_argument("--submissions", type=int, help="default 1000 (100 with --quick)")
    parser.add_argument("--seconds", type=float, help="load per URL; default 10 (3 with --quick)")
    parser.add_argument("--connections", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--max-requests", type=int, default=200_000,
                        help="stop a Python load run after this many requests")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--tool", choices=("auto", "wrk", "python"), default="auto",
                        help="load generator: wrk when installed (auto), or the Python loop")
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        load_main(args)
        return 0
    count = args.submissions or (100 if args.quick else 1000)
    seconds = args.seconds or (3.0 if args.quick else 10.0)

    work = Path(tempfile.mkdtemp(prefix="evalserver-bench-"))
    server = None
    try:
        env = server_env(work)
        t0 = time.perf_counter()
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "load_benchmarks", "--benchmark", BENCHMARK)
        os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL",
                                               "MEDIA_ROOT", "EVALSERVER_CACHE_DIR",
                                               "SECRET_KEY", "DEBUG", "LOG_LEVEL")})
        import django

        django.setup()
        insert_submissions(count)
        print(f"Setup: {count} scored public submissions on {BENCHMARK} (5 label sets) in a "
              f"throwaway SQLite database, {time.perf_counter() - t0:.1f} s")
        print(f"Worker: significance (rank_ub) of {count} rows on every current label set "
              f"computed and stored in {time_refresh():.2f} s")
        seconds_ub, top = time_imagenet_rank_ub()
        print(f"rank_ub of 1,000 ImageNet submissions (50,000 examples): {seconds_ub:.2f} s "
              f"({top} rows with rank_ub 1)  target < 10 s: "
              f"{'met' if seconds_ub < 10 else 'MISSED'}")
        uncached, cached, rows = time_selector(5 if args.quick else 11)
        print(f"leaderboard_get, in process: {uncached:.1f} ms uncached, "
              f"{cached:.2f} ms cached ({rows} rows; median)")

        port = free_port()
        server = start_gunicorn(env, port, work / "gunicorn.log", args.web_workers)
        print(f"gunicorn: {args.web_workers} gthread workers (evalserver/gunicorn_conf.py) on "
              f"{HOST}:{port}; load {seconds:g} s per URL, {args.connections} connections")
        failed = False
        for name, path, min_rps, max_p99 in TARGETS:
            statuses = [get(port, path)[0] for _ in range(4 * args.web_workers)]  # warm up
            if statuses[0] == 404:
                print(f"  {name:4} {path}: not available (404)")
                continue
            if any(s != 200 for s in statuses):
                print(f"  {name:4} {path}: answered {sorted(set(statuses))} while warming up")
                failed = True
                continue
            load = subprocess.run(
                [sys.executable, __file__, "--load", "--port", str(port), "--path", path,
                 "--seconds", str(seconds), "--connections", str(args.connections),
                 "--max-requests", str(args.max_requests), "--tool", args.tool],
                capture_output=True, text=True, cwd=ROOT)
            if load.returncode != 0:
                print(f"  {name:4} {path}: the load generator failed:\n{load.stderr[-2000:]}")
                failed = True
                continue
            r = json.loads(load.stdout.strip().splitlines()[-1])
            target = f">= {min_rps:g} req/s" + (f", p99 < {max_p99:g} ms" if max_p99 else "")
            met = r["rps"] >= min_rps and (max_p99 is None or r["p99_ms"] < max_p99)
            print(f"  {name:4} {path}: {r['rps']:7.1f} req/s, p50 {r['p50_ms']:6.1f} ms, "
                  f"p99 {r['p99_ms']:6.1f} ms ({r['requests']} requests; {r['tool']})  "
                  f"target {target}: {'met' if met else 'MISSED'}")
            if r["non_200"] or r["errors"]:
                print(f"       {r['non_200']} responses other than 200, {r['errors']} errors")
                failed = True
        return 1 if failed else 0
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
