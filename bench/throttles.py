"""What the API's rate limits (leaderboard/common/throttling.py) cost a request, and how exact
they are under a burst.

    python bench/throttles.py            # 2,000 requests per case, bursts of 32 threads
    python bench/throttles.py --quick    # 200 requests per case (CI)

Setup (untimed): a throwaway SQLite database (migrated), the real settings, the real Redis of
REDIS_URL (the `throttle` cache, under a key prefix of its own). Timed, in this process through
Django's test client, `GET /api/benchmarks/` (an empty list: the view costs little, so the
limits' share shows): with the limits off; on, each request from a new address (a log of one
request); on, one user's requests with the user limit (600/minute) nearly used up (a sorted set of
599 request times in Redis). Then bursts: N threads at once from one address, with a limit of
N/2 a minute (DRF's own throttle, which reads the log and writes it back, let 32 of 32 through
with a limit of 16). A quick run fails only on a count: the sequential limits must let exactly
their number through and then answer 429 with the headers, and a burst exactly half.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.leaderboard import database_migrated, server_env  # noqa: E402

PATH = "/api/benchmarks/"


def timed(requests: int, send: object) -> float:
    """Median milliseconds of `requests` calls of send(i), in 5 rounds."""
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for i in range(requests // 5):
            send(i)  # type: ignore[operator]
        rounds.append((time.perf_counter() - t0) / (requests // 5) * 1000)
    return statistics.median(rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 requests per case (CI)")
    args = parser.parse_args()
    requests = 200 if args.quick else 2000
    work = Path(tempfile.mkdtemp(prefix="evalserver-throttles-"))
    failures: list[str] = []
    try:
        env = server_env(work)
        database_migrated(env)
        os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL",
                                               "MEDIA_ROOT", "SECRET_KEY", "DEBUG",
                                               "LOG_LEVEL", "SECURE_SSL_REDIRECT")})
        os.environ["ALLOWED_HOSTS"] = "testserver"
        import django

        django.setup()
        from django.conf import settings
        from django.contrib.auth.models import User
        from django.db import connection
        from django.test import Client
        from rest_framework.authtoken.models import Token

        settings.CACHES["throttle"]["KEY_PREFIX"] = f"bench-throttles-{uuid.uuid4().hex}"
        run = uuid.uuid4().int % 200
        rates = dict(settings.EVALSERVER_THROTTLE_RATES)
        client = Client()

        settings.EVALSERVER_THROTTLE_RATES = dict.fromkeys(rates)
        off = timed(requests, lambda i: client.get(PATH, REMOTE_ADDR=f"10.{run}.0.1"))
        settings.EVALSERVER_THROTTLE_RATES = rates
        fresh = timed(requests, lambda i: client.get(
            PATH, REMOTE_ADDR=f"10.{run}.{i // 250}.{i % 250}"))
        user = User.objects.create_user("bench-user")
        token = Token.objects.create(user=user)
        full = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
        limit = int(str(rates["user"]).split("/")[0])
        for _ in range(limit - 1):
            full.get(PATH)
        # each round 1 request under the limit; the log then holds limit - 1 entries
        t0 = time.perf_counter()
        answer = full.get(PATH)
        near = (time.perf_counter() - t0) * 1000
        logged = [full.get(PATH) for _ in range(2)]
        print(f"GET {PATH}, median per request: limits off {off:.2f} ms; on, a new address "
              f"each {fresh:.2f} ms (+{fresh - off:.2f}); one user at {limit - 1} of {limit} "
              f"a minute {near:.2f} ms; load {os.getloadavg()[0]:.2f}")

        # the sequential count, headers and 429: exact
        if (answer.status_code, answer.headers.get("RateLimit-Remaining")) != (200, "0"):
            failures.append(f"the user's {limit}th request: {answer.status_code} "
                            f"{answer.headers.get('RateLimit-Remaining')}")
        refused = logged[0]
        if (refused.status_code != 429 or refused.json()["error"]["code"] != "throttled"
                or not refused.headers.get("Retry-After")):
            failures.append(f"past the user limit: {refused.status_code} {refused.content!r}")

        for threads in (8, 32):
            settings.EVALSERVER_THROTTLE_RATES = {**rates, "anon": f"{threads // 2}/minute"}
            address = f"10.{run}.251.{threads}"
            start = threading.Barrier(threads)
            statuses: list[int] = []

            def burst(address: str = address, start: threading.Barrier = start,
                      statuses: list[int] = statuses) -> None:
                try:
                    start.wait()
                    statuses.append(Client().get(PATH, REMOTE_ADDR=address).status_code)
                finally:
                    connection.close()

            workers = [threading.Thread(target=burst) for _ in range(threads)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            allowed = statuses.count(200)
            print(f"a burst of {threads} at once, limit {threads // 2}: {allowed} let through, "
                  f"{statuses.count(429)} refused")
            if (allowed, statuses.count(429)) != (threads // 2, threads - threads // 2):
                failures.append(f"burst of {threads}: {sorted(statuses)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
