"""Requests per second and latency of the public CIFAR-10 leaderboard, JSON and HTML.

    python bench/leaderboard.py            # 10,000 submissions, 10 s of load per URL
    python bench/leaderboard.py --quick    # 100 submissions, 1 s per URL (what CI runs)

Everything is throwaway and local: a SQLite database and media folder in a temporary
directory (migrated, cifar10 loaded from the data directory), N scored public submissions
inserted with bulk_create (synthetic but valid Score rows on the latest version of every
label set: accuracy, correct, total, the Clopper-Pearson interval and the packed per-example
hits that the paired tests read), gunicorn with the project's config
(evalserver/gunicorn_conf.py: 2 gthread workers of 4 threads) on a free 127.0.0.1 port, warmed
up, then load from a second process: `wrk` (--latency) when it is installed, else a
multi-threaded keep-alive http.client loop bounded in requests and time. Each URL that answers
404 (not built yet) is reported as not available. The JSON board is its first page (100 rows,
docs/api.md §5.2); "JSON 304" is the same URL revalidated with the ETag of its first answer
(If-None-Match), which must answer 304 throughout. The streamed CSV of the whole board is
downloaded once, cold and again (seconds, size), and its rows counted.
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
import fcntl
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import load_main  # noqa: E402
from tests.deploy.local_gunicorn import THROTTLES_OFF  # noqa: E402
from tests.helpers import process_group_stop  # noqa: E402
from workers.scoring.families.registry import family_named  # noqa: E402

BENCHMARK = "cifar10"
# (name, path, minimum requests/s, maximum p99 in ms, maximum p50 in ms, revalidated: sent
# with If-None-Match of the URL's ETag, so every answer must be 304; connections, None for
# --connections). The 304's p50 is a latency, taken from one connection: with 8 its figure
# is mostly the queue in front of the 2 workers.
TARGETS: tuple[tuple[str, str, float | None, float | None, float | None, bool, int | None],
               ...] = (
    ("JSON", f"/api/benchmarks/{BENCHMARK}/leaderboard/", 300.0, 50.0, None, False, None),
    ("JSON 304", f"/api/benchmarks/{BENCHMARK}/leaderboard/", None, None, 5.0, True, 1),
    ("JSON 304", f"/api/benchmarks/{BENCHMARK}/leaderboard/", None, None, None, True, None),
    ("HTML", f"/benchmarks/{BENCHMARK}/", 100.0, None, None, False, None),
)
CSV_PATH = f"/benchmarks/{BENCHMARK}/leaderboard.csv"
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
        # plain http on 127.0.0.1, no TLS proxy: no redirect to https (docs/operators/https.md)
        "SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
        **THROTTLES_OFF,
    }
    env.pop("EVALSERVER_MULTILABEL_FILE", None)
    return env


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)


# A folder where the first bench of a run leaves its freshly migrated SQLite database for the
# next to copy: scripts/test.sh sets it for its lane of benches, which run the same code one
# after the other. Migrating takes about 5 s of CPU; copying the file, milliseconds. Unset
# (a bench run by hand), every bench migrates its own.
MIGRATED_ENV = "EVALSERVER_BENCH_MIGRATED"


def database_migrated(env: dict[str, str]) -> None:
    """The bench's database (env's DATABASE_URL, SQLite) migrated, or copied from the run's
    migrated one (MIGRATED_ENV)."""
    folder = os.environ.get(MIGRATED_ENV)
    url = env["DATABASE_URL"]
    if not folder or not url.startswith("sqlite:///"):
        manage(env, "migrate", "--noinput", "-v", "0")
        return
    target, migrated = Path(url.removeprefix("sqlite:///")), Path(folder) / "db.sqlite3"
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one migrates, any other waits for its file
        if migrated.exists():
            shutil.copyfile(migrated, target)
            return
        manage(env, "migrate", "--noinput", "-v", "0")
        partial = migrated.with_suffix(".partial")
        shutil.copyfile(target, partial)
        partial.replace(migrated)


def django_in_process(work: Path, *benchmarks: str) -> None:
    """A migrated server database in `work` with `benchmarks` loaded, and Django set up in this
    process on it (the benches that time selectors and views in process, beside no server)."""
    env = server_env(work)
    database_migrated(env)
    manage(env, "load_benchmarks", *(arg for slug in benchmarks for arg in ("--benchmark", slug)))
    os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL",
                                           "MEDIA_ROOT", "EVALSERVER_CACHE_DIR", "SECRET_KEY",
                                           "DEBUG", "LOG_LEVEL", "SECURE_SSL_REDIRECT")})
    os.environ["ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()


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
        total = int(version.summary.get("evaluated") or version.label_set.example_set.size)
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
                "label_set": version.label_set.slug,
                "image_set": version.label_set.example_set.slug,  # the record's key
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
    from leaderboard.submissions.board_significance import board_significance_refresh

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
    from workers.scoring.significance.pairs import board_significance_pruned

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


def get(port: int, path: str, timeout: float = 30.0, headers: dict[str, str] | None = None
        ) -> tuple[int, bytes]:
    return get_answer(port, path, timeout, headers)[:2]


def get_answer(port: int, path: str, timeout: float = 30.0,
               headers: dict[str, str] | None = None) -> tuple[int, bytes, str | None]:
    """(status, body, ETag)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), response.getheader("ETag")
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
    process_group_stop(process)


# -- counts -------------------------------------------------------------------------------------


def first_page_checked(port: int, count: int) -> bool:
    """The JSON board's first page: 100 rows of a board of `count` rows, ranked from 1."""
    status, body = get(port, TARGETS[0][1])
    page = json.loads(body) if status == 200 else {}
    ok = (status == 200 and page["count"] == count and len(page["rows"]) == min(100, count)
          and page["rows"][0]["ranks"]["original"] == 1)
    print(f"  JSON first page: {len(page.get('rows', []))} of {page.get('count')} rows, "
          f"{len(body) / 1e3:.0f} kB: {'as expected' if ok else 'WRONG'}")
    return ok


def csv_download_checked(port: int, count: int) -> bool:
    """The whole board as CSV, twice (the second from the cached board): seconds, size and
    whether it has a header and one line per submission."""
    timings = []
    for _ in range(2):
        t0 = time.perf_counter()
        status, body = get(port, CSV_PATH, timeout=300)
        timings.append(time.perf_counter() - t0)
    lines = body.count(b"\n")
    ok = status == 200 and lines == count + 1
    print(f"  CSV      {CSV_PATH}: {len(body) / 1e6:.1f} MB, {lines} lines, "
          f"{timings[0]:.2f} s cold, {timings[1]:.2f} s cached board: "
          f"{'as expected' if ok else f'WRONG (status {status})'}")
    return ok


# -- main ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="100 submissions and 1 s of load per URL (CI)")
    parser.add_argument("--submissions", type=int, help="default 10000 (100 with --quick)")
    parser.add_argument("--seconds", type=float, help="load per URL; default 10 (1 with --quick)")
    parser.add_argument("--connections", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--max-requests", type=int, default=200_000,
                        help="stop a Python load run after this many requests")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--tool", choices=("auto", "wrk", "python"), default="auto",
                        help="load generator: wrk when installed (auto), or the Python loop")
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--header", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        load_main(args)
        return 0
    count = args.submissions or (100 if args.quick else 10_000)
    # quick: a smoke test of the answers (each 200 or 304 as asked), not a figure; a longer
    # load is only CPU taken from the tests CI runs beside it
    seconds = args.seconds or (1.0 if args.quick else 10.0)

    work = Path(tempfile.mkdtemp(prefix="evalserver-bench-"))
    server = None
    try:
        env = server_env(work)
        t0 = time.perf_counter()
        database_migrated(env)
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
        failed = not first_page_checked(port, count)
        for name, path, min_rps, max_p99, max_p50, revalidated, connections in TARGETS:
            status, _, etag = get_answer(port, path)
            headers = {"If-None-Match": etag or "-"} if revalidated else {}
            expect = 304 if revalidated else 200
            # warm up
            statuses = [status] + [get(port, path, headers=headers)[0]
                                   for _ in range(4 * args.web_workers)]
            if statuses[0] == 404:
                print(f"  {name:8} {path}: not available (404)")
                continue
            if statuses[0] != 200 or any(s != expect for s in statuses[1:]):
                print(f"  {name:8} {path}: answered {sorted(set(statuses))} while warming up")
                failed = True
                continue
            load = subprocess.run(
                [sys.executable, __file__, "--load", "--port", str(port), "--path", path,
                 "--seconds", str(seconds),
                 "--connections", str(connections or args.connections),
                 "--max-requests", str(args.max_requests), "--tool", args.tool,
                 *(f"--header={k}: {v}" for k, v in headers.items())],
                capture_output=True, text=True, cwd=ROOT)
            if load.returncode != 0:
                print(f"  {name:4} {path}: the load generator failed:\n{load.stderr[-2000:]}")
                failed = True
                continue
            r = json.loads(load.stdout.strip().splitlines()[-1])
            goals = [(f">= {limit:g} req/s" if i == 0 else f"p{50 + 49 * (i == 1)} < {limit:g} ms",
                      value >= limit if i == 0 else value < limit)
                     for i, (limit, value) in enumerate(((min_rps, r["rps"]),
                                                         (max_p99, r["p99_ms"]),
                                                         (max_p50, r["p50_ms"])))
                     if limit is not None]
            print(f"  {name:8} {path}: {r['rps']:7.1f} req/s, p50 {r['p50_ms']:6.2f} ms, "
                  f"p99 {r['p99_ms']:6.1f} ms ({r['requests']} requests; {r['tool']})"
                  + (f"  target {', '.join(t for t, _ in goals)}: "
                     f"{'met' if all(ok for _, ok in goals) else 'MISSED'}" if goals else ""))
            if r["unexpected"] or r["errors"]:
                print(f"       {r['unexpected']} responses other than {expect}, "
                      f"{r['errors']} errors")
                failed = True
        failed = not csv_download_checked(port, count) or failed
        one, five, _ = os.getloadavg()  # the figures depend on what else the machine runs
        print(f"Load average at the end: {one:.2f} (1 min), {five:.2f} (5 min), "
              f"{os.cpu_count()} cores")
        return 1 if failed else 0
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
