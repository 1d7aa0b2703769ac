"""Latency of the public leaderboard while two slow uploads trickle into the same web.

    python bench/slow_uploads.py            # 1,000 submissions, 10 s of load per phase
    python bench/slow_uploads.py --quick    # 100 submissions, 1 s per phase (what CI runs)

The issue it answers: with gunicorn's sync workers, two uploads at 1 MB/s held both worker
processes, and /healthz and the leaderboard went unanswered until gunicorn killed them. Here
gunicorn runs with the project's config (evalserver/gunicorn_conf.py: 2 gthread workers of 4
threads, as scripts/serve.sh and compose run it) on a throwaway SQLite database set up as
bench/leaderboard.py sets up its own (N scored public CIFAR-10 submissions). The JSON
leaderboard is loaded from a second process (`wrk` when installed, else a Python client) for the
same time twice: alone, then while two authenticated clients each send a 3 MiB predictions
upload 4 bytes every 0.25 s (after a first 256 KiB, so that Django has opened the file). Each
phase prints requests/s, p50 and p99, beside the machine's load average and core count.

Exit status: 1 when a board request failed or answered other than 200, or none was answered
in a phase, or when an upload was answered or cut off while it trickled (the web gave up on
it, or a worker died); else 0. No timing is judged: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.leaderboard import (  # noqa: E402
    BENCHMARK,
    HOST,
    database_migrated,
    free_port,
    get,
    insert_submissions,
    manage,
    server_env,
    start_gunicorn,
    stop,
)
from tests.deploy.slow_client import SlowUpload  # noqa: E402

BOARD = f"/api/benchmarks/{BENCHMARK}/leaderboard/"
UPLOAD_BYTES = 3 * 1024 * 1024


def load(port: int, seconds: float, connections: int, tool: str) -> dict[str, Any]:
    """bench/leaderboard.py's load generator, in its own process, on the JSON board."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "leaderboard.py"), "--load", "--port", str(port),
         "--path", BOARD, "--seconds", str(seconds), "--connections", str(connections),
         "--max-requests", "200000", "--tool", tool],
        capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"the load generator failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def machine() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (1 min), {five:.2f} (5 min), {os.cpu_count()} cores"


def api_token() -> str:
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    user = User.objects.create_user("slow-uploader", password="!unused-password-1")
    return str(Token.objects.create(user=user).key)


def report(name: str, r: dict[str, Any]) -> bool:
    """Print one phase; whether every request answered 200."""
    print(f"  {name:28} {r['rps']:7.1f} req/s, p50 {r['p50_ms']:6.1f} ms, p99 "
          f"{r['p99_ms']:6.1f} ms ({r['requests']} requests; {r['tool']}); {machine()}")
    if r["unexpected"] or r["errors"] or not r["requests"]:
        print(f"       {r['non_200']} responses other than 200, {r['errors']} errors"
              + ("; none answered" if not r["requests"] else ""))
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="100 submissions and 1 s of load per phase (CI)")
    parser.add_argument("--submissions", type=int, help="default 1000 (100 with --quick)")
    parser.add_argument("--seconds", type=float, help="load per phase; default 10 (1 --quick)")
    parser.add_argument("--connections", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--tool", choices=("auto", "wrk", "python"), default="auto",
                        help="load generator: wrk when installed (auto), or the Python loop")
    args = parser.parse_args()
    count = args.submissions or (100 if args.quick else 1000)
    # quick: a smoke test of the answers (all 200, the uploads still open), not a figure; a
    # longer load is only CPU taken from the tests CI runs beside it
    seconds = args.seconds or (1.0 if args.quick else 10.0)

    work = Path(tempfile.mkdtemp(prefix="evalserver-bench-slow-"))
    server = None
    uploads: list[SlowUpload] = []
    try:
        env = {**server_env(work), "EVALSERVER_UPLOAD_TEMP_DIR": str(work / "uploads"),
               "EVALSERVER_DAILY_QUOTA": "0"}
        t0 = time.perf_counter()
        database_migrated(env)
        manage(env, "load_benchmarks", "--benchmark", BENCHMARK)
        os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL",
                                               "MEDIA_ROOT", "EVALSERVER_CACHE_DIR",
                                               "EVALSERVER_UPLOAD_TEMP_DIR", "SECRET_KEY",
                                               "DEBUG", "LOG_LEVEL")})
        import django

        django.setup()
        insert_submissions(count)
        token = api_token()
        print(f"Setup: {count} scored public submissions on {BENCHMARK} in a throwaway SQLite "
              f"database, {time.perf_counter() - t0:.1f} s")

        port = free_port()
        server = start_gunicorn(env, port, work / "gunicorn.log", 2)
        print(f"gunicorn: evalserver/gunicorn_conf.py (2 gthread workers of "
              f"{os.environ.get('WEB_THREADS', '4')} threads) on {HOST}:{port}; {BOARD}, "
              f"{seconds:g} s of load per phase, {args.connections} connections")
        for _ in range(8):  # warm up: every thread's first answer, the rendered board cached
            if get(port, BOARD)[0] != 200:
                print(f"  {BOARD} does not answer 200")
                return 1
        ok = report("alone", load(port, seconds, args.connections, args.tool))

        headers = {"Authorization": f"Token {token}"}
        uploads = [SlowUpload(HOST, port, "/api/submissions/", field="cifar10-test",
                              file_bytes=UPLOAD_BYTES, headers=headers).start()
                   for _ in range(2)]
        temp = work / "uploads"
        deadline = time.monotonic() + 60
        while len(list(temp.glob("tmp*.upload*"))) < 2:  # both bodies are being read
            if time.monotonic() > deadline:
                print("  the web did not start reading both uploads within 60 s")
                return 1
            time.sleep(0.1)
        ok = report("with two slow uploads", load(port, seconds, args.connections,
                                                   args.tool)) and ok
        sent = [u.sent for u in uploads]
        cut = [u for u in uploads if u.answered() or u.send_error is not None]
        print(f"  the uploads meanwhile: {sent[0]} and {sent[1]} bytes of {UPLOAD_BYTES} sent, "
              f"{'both still open' if not cut else f'{len(cut)} answered or cut off'}")
        return 0 if ok and not cut else 1
    finally:
        for upload in uploads:
            upload.close()
        if server is not None:
            stop(server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
