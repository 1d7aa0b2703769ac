"""The comparison of two submissions (GET /api/submissions/<id>/compare/<other>/, and its page):
what one request costs on a board of N public submissions, on CIFAR-10 and on ImageNet.

    python bench/compare.py              # 1,000 CIFAR-10 and 300 ImageNet submissions
    python bench/compare.py --quick      # 50 and 10 (what CI runs)

Setup (untimed), in a throwaway SQLite database and media folder: cifar10 and imagenet loaded
from the data directory, and N scored public submissions per benchmark inserted as
bench/leaderboard.py inserts them (synthetic Score rows with packed hit vectors on every
current label-set version). Timed in this process (Django's test client, as one web process):
the API for two of them cold (the first request: compiled label sets read) and warm (median
of 10), with the first page of 50 examples and with the table alone (`page_size=1`), and the
HTML page warm. Checked (the quick mode fails only on these): each label set's discordant
counts against the stored hits unpacked here, its p-value against scipy's exact binomial
test, and the listed example ids against those where exactly one of the two is right.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import leaderboard as board_bench  # noqa: E402
from bench.leaderboard import django_in_process  # noqa: E402


def _check(body: dict[str, Any], first: int, second: int) -> int:
    """Problems in the answer, against the stored hits (0: none)."""
    from scipy.stats import binomtest

    from leaderboard.catalog.label_set_version_files import compiled_for_version
    from leaderboard.submissions.models import Score
    from workers.scoring.label_set_builders import evaluated_mask
    from workers.scoring.significance import unpack_hits

    problems = 0
    for row in body["label_sets"]:
        scores = {s.submission_id: s for s in Score.objects.filter(
            submission_id__in=[first, second], label_set__slug=row["slug"],
            label_set_version__number=row["version"]).select_related("hits",
                                                                     "label_set_version")}
        a, b = (unpack_hits(bytes(scores[i].hits.bits), scores[i].total)  # type: ignore[union-attr]
                for i in (first, second))
        only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
        expected = binomtest(only_a, only_a + only_b, 0.5).pvalue
        if (row["only_first"], row["only_second"]) != (only_a, only_b) or not np.isclose(
                row["p_value"], expected, rtol=1e-9, atol=0):
            print(f"  MISMATCH on {row['slug']}: {row['only_first']}/{row['only_second']} "
                  f"p={row['p_value']} against {only_a}/{only_b} p={expected}")
            problems += 1
        if row["slug"] == body["examples"]["label_set"]:
            version = scores[first].label_set_version
            evaluated = np.flatnonzero(evaluated_mask(compiled_for_version(version)))
            ids = evaluated[np.flatnonzero(a != b)][:50].tolist()
            if [r["index"] for r in body["examples"]["results"]] != ids:
                print(f"  MISMATCH in the examples of {row['slug']}")
                problems += 1
    return problems


def _timed(benchmark: str) -> int:
    from django.core.cache import cache
    from django.test import Client

    from leaderboard.submissions.models import Submission

    ids = list(Submission.objects.filter(benchmark__slug=benchmark).order_by("id")
               .values_list("id", flat=True)[:2])
    api = f"/api/submissions/{ids[0]}/compare/{ids[1]}/"
    client = Client()
    cache.clear()

    def once(url: str, **query: str) -> tuple[float, Any]:
        t0 = time.perf_counter()
        response = client.get(url, query)
        elapsed = time.perf_counter() - t0
        assert response.status_code == 200, (url, response.status_code, response.content[:500])
        return elapsed, response

    cold, response = once(api)
    body = response.json()
    warm = statistics.median(once(api)[0] for _ in range(10))
    table = statistics.median(once(api, page_size="1")[0] for _ in range(10))
    page = statistics.median(once(f"/submissions/{ids[0]}/compare/{ids[1]}/")[0]
                             for _ in range(10))
    rows = Submission.objects.filter(benchmark__slug=benchmark).count()
    print(f"{benchmark}: {rows} public submissions, {len(body['label_sets'])} label sets "
          f"compared, {body['examples']['count']} examples of {body['examples']['label_set']} "
          f"exactly one gets right; API cold {cold * 1000:.0f} ms, warm {warm * 1000:.1f} ms "
          f"(table alone {table * 1000:.1f} ms), page warm {page * 1000:.1f} ms; "
          f"load {os.getloadavg()[0]:.2f}")
    return _check(body, ids[0], ids[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 and 10 submissions (CI)")
    args = parser.parse_args()
    counts = {"cifar10": 50, "imagenet": 10} if args.quick else {"cifar10": 1000,
                                                                  "imagenet": 300}
    work = Path(tempfile.mkdtemp(prefix="evalserver-compare-"))
    try:
        django_in_process(work, "cifar10", "imagenet")
        problems = 0
        for benchmark, count in counts.items():
            t0 = time.perf_counter()
            board_bench.BENCHMARK = benchmark  # what insert_submissions fills
            # its owners are named bench-NNN each time: the last benchmark's keep theirs apart
            from django.contrib.auth.models import User
            from django.db.models import Value
            from django.db.models.functions import Concat

            User.objects.filter(username__startswith="bench-").update(
                username=Concat(Value("old-"), "username"))
            board_bench.insert_submissions(count, seed=len(benchmark))
            print(f"Setup: {count} {benchmark} submissions, {time.perf_counter() - t0:.1f} s")
            problems += _timed(benchmark)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("OK: counts, p-values and examples match" if not problems
          else f"FAILED: {problems} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
