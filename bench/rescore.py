"""Re-scoring after a review decision, on stored ImageNet submissions.

    python bench/rescore.py                 # 1,000 stored submissions
    python bench/rescore.py --quick         # 30: a smoke test
    python bench/rescore.py --mid           # 2,000, the guard (what CI runs)
    python bench/rescore.py --submissions N

Setup (untimed), in a throwaway SQLite database and media folder: imagenet loaded from the
data directory; N scored submissions stored as the worker stores them (compact top-5 .npz and
a Score row on every label set's current version). Each is the real cleanlab ResNet-50
(top-1, canonical order) with 2% of its top-1 predictions changed at random and random
runners-up; 1% of them also predict one chosen novel ReaL pair, whose review item exists.
Timed: (1) a panel of three accepts that pair -> new ReaL version -> every submission
re-scored on it (the incremental path: only judged pairs changed) -> the leaderboard read;
(2) a full re-score of all N from their stored predictions, as any other version gets, once
in this process and once in EVALSERVER_RESCORE_PROCESSES processes (rescoring/pool.py).
Targets (issue 22, 10,000 submissions): (1) under 1 s, (2) under 30 s using both cores. With
1,000 <= N < 10,000 the 10,000 figure is extrapolated (fixed costs apart) and marked so; below
1,000 only the measured times are printed.

The guard (issue 22: the figures had regressed unnoticed while CI ran 30 submissions): at
--mid and above, what does not depend on the machine's load is counted per re-scored
submission (database queries, stored files opened, bytes read, compact arrays decoded whole;
bench/rescore_meter.py) and judged against BUDGETS; the run fails when one is over. Timings
are printed per submission beside them, never judged there (CI's machine is shared).

Measured: see bench/README.md (the session-2 figures of 1.83 s and 37.2 s were not
reproducible as a code regression: see there).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.leaderboard import database_migrated, manage, server_env  # noqa: E402

# Issue 22's targets at 10,000 submissions: one accepted verdict through to the leaderboard,
# and a full re-score using both cores (judged by full runs only: they are timings).
TARGET_DECISION_S, TARGET_FULL_S, TARGET_N = 1.0, 30.0, 10_000
MID_N = 2_000
# The guard (--mid, and full runs): budgets per re-scored submission of what does not depend
# on the machine's load (bench/rescore_meter.py). A query per submission, a second read of
# each stored file or a whole-file read where rows would do is several times these.
#   decision: the re-scoring of the accepted verdict's version (incremental: the changed
#             example's rows of each built top-k index segment, docs/metrics.md §14, and of
#             each stored file of the newest segment; the 1% that predict the pair revised
#             from their parent's scores, none read whole), and its publishing. At 2,000: the
#             newest segment's 209 files and 7 segments, 0.108 opens and 65 bytes a
#             submission, no decode. Opening every file is 1.02 opens (8x the budget); reading
#             the moved 1.35% whole again is 0.0135 decodes and 6.8 kB (6x and 7x).
#   board:    the leaderboard read after it
#   full:     a full re-score; bytes as a share of the stored compact files' size
BUDGETS: dict[str, dict[str, float]] = {
    "decision": {"queries": 0.02, "opens": 0.15, "decodes": 0.002, "bytes": 1024.0},
    "board": {"queries": 0.01, "opens": 0.0, "decodes": 0.0, "bytes": 0.0},
    "full": {"queries": 0.05, "opens": 1.0, "decodes": 1.0, "bytes": 1.01},
}


def setup(count: int, seed: int = 0) -> tuple[int, list[int], int]:
    """Store `count` scored ImageNet submissions; returns (review item id, reviewer ids, the
    stored compact files' bytes)."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from django.utils import timezone

    from leaderboard.catalog.label_set_version_files import compiled_for_version
    from leaderboard.catalog.models import ExampleSet
    from leaderboard.catalog.selectors import benchmark_get, label_set_versions_current
    from leaderboard.catalog.teams.services import host_team_member_set
    from leaderboard.review.models import ReviewItem, ReviewItemSubmission
    from leaderboard.submissions.models import Score, Submission, SubmissionFile
    from leaderboard.submissions.services import hit_vectors_store
    from workers.scoring import datasets
    from workers.scoring.compact import compact_arrays
    from workers.scoring.hits import in_keys
    from workers.scoring.predictions import Predictions
    from workers.scoring.scorer import headline_hits, score_label_set

    rng = np.random.default_rng(seed)
    data_dir = Path(settings.EVALSERVER_DATA_DIR)
    base = datasets.imagenet_cleanlab_to_canonical(
        data_dir, np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")).astype(np.int64)
    benchmark = benchmark_get(slug="imagenet")
    example_set = ExampleSet.objects.get(slug="imagenet-val")
    versions = label_set_versions_current(benchmark=benchmark)
    compiled = {v.label_set.slug: compiled_for_version(v) for v in versions}
    real = compiled["real"]
    # the chosen pair: an included image and a class no rater judged there
    example = int(np.flatnonzero(real.arrays["mask"])[0])
    judged = np.concatenate([real.arrays["accepted_keys"], real.arrays["wrong_keys"]])
    cls = next(c for c in range(1000) if example * 1000 + c not in set(judged.tolist()))
    owner = User.objects.create(username="bench-owner")
    now = timezone.now()
    subs = Submission.objects.bulk_create(
        [Submission(owner=owner, benchmark=benchmark, model_name=f"bench {i:05d}",
                    status=Submission.Status.SCORED, started=now, finished_at=now, attempts=1)
         for i in range(count)], batch_size=500)
    files, scores, predicting = [], [], []
    stored_bytes = 0
    for i, sub in enumerate(subs):
        top1 = base.copy()
        flip = rng.random(50_000) < 0.02
        top1[flip] = rng.integers(0, 1000, size=int(flip.sum()))
        if i % 100 == 0:
            top1[example] = cls
            predicting.append(sub)
        topk = np.empty((50_000, 5), dtype=np.int16)
        topk[:, 0] = top1
        topk[:, 1:] = (top1[:, None] + rng.integers(1, 1000, size=(50_000, 4))) % 1000
        buffer = io.BytesIO()  # as the scoring worker stores it (workers/scoring/compact.py)
        np.savez(buffer, **compact_arrays({example_set.slug: {"topk": topk}}))
        stored_bytes += buffer.tell()
        name = default_storage.save(f"compact/bench-{sub.pk}.npz", ContentFile(buffer.getvalue()))
        files.append(SubmissionFile(submission=sub, example_set=example_set, file=name,
                                    original_name="bench.npy", size=0, sha256="0" * 64,
                                    compact=name))
        preds = Predictions(topk=topk.astype(np.int32), topk_scores=None, scores=None,
                            scores_kind=None)
        records = {version.pk: score_label_set(compiled[version.label_set.slug], preds)[0]
                   for version in versions}
        # the submission's hit vectors in one write (one per version would be five commits)
        digests = hit_vectors_store(hits={
            version.pk: headline_hits(compiled[version.label_set.slug], preds)
            for version in versions})
        for version in versions:
            record = records[version.pk]
            scores.append(Score(submission=sub, label_set_version=version,
                                label_set_id=version.label_set_id, accuracy=record["accuracy"],
                                correct=record["correct"], total=record["total"],
                                ci_low=record["ci_low"], ci_high=record["ci_high"],
                                record=record, hits_id=digests[version.pk]))
    SubmissionFile.objects.bulk_create(files, batch_size=500)
    Score.objects.bulk_create(scores, batch_size=1000)
    assert not in_keys(judged, np.array([example]), np.array([cls]), 1000).any()
    item = ReviewItem.objects.create(label_set=real_label_set(versions), example_index=example,
                                     class_id=cls, submission_count=len(predicting))
    ReviewItemSubmission.objects.bulk_create(
        [ReviewItemSubmission(item=item, submission=s) for s in predicting])
    reviewers = [User.objects.create(username=f"reviewer-{i}") for i in range(3)]
    for user in reviewers:  # reviewers of the benchmark's team (docs/hosts/teams.md)
        host_team_member_set(actor=None, team=item.label_set.benchmark.team, user=user,
                             role="reviewer")
    return item.pk, [u.pk for u in reviewers], stored_bytes


def real_label_set(versions):  # type: ignore[no-untyped-def]
    return next(v.label_set for v in versions if v.label_set.slug == "real")


def _judge(counts: dict[str, dict[str, float]], judged: bool) -> bool:
    """Print each count per re-scored submission against its budget; True if all within."""
    ok = True
    for part, per in counts.items():
        shown = []
        for name, value in per.items():
            budget = BUDGETS[part][name]
            over = value > budget
            ok &= not over
            shown.append(f"{name} {value:.4g} (<= {budget:g}{', OVER' if over and judged else ''})")
        print(f"  per re-scored submission, {part}{'' if judged else ' (not judged: too few)'}: "
              + ", ".join(shown))
    if judged:
        print("  guard: " + ("every count within its budget" if ok else "OVER BUDGET"))
    return ok or not judged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="30 submissions (a smoke test)")
    mode.add_argument("--mid", action="store_true",
                      help=f"{MID_N:,} submissions, counts judged against the budgets (CI)")
    parser.add_argument("--submissions", type=int, help="default 1000 (30 with --quick)")
    args = parser.parse_args()
    count = args.submissions or (30 if args.quick else MID_N if args.mid else 1000)
    work = Path(tempfile.mkdtemp(prefix="evalserver-rescore-"))
    try:
        env = server_env(work)
        database_migrated(env)
        manage(env, "load_benchmarks", "--benchmark", "imagenet")
        os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL",
                                               "MEDIA_ROOT", "EVALSERVER_CACHE_DIR",
                                               "SECRET_KEY", "DEBUG", "LOG_LEVEL")})
        import django

        django.setup()
        from django.conf import settings
        from django.contrib.auth.models import User
        from django.db import transaction
        from django.test.utils import override_settings

        from bench.rescore_meter import metered
        from leaderboard import queue
        from leaderboard.catalog.models import LabelSetVersion
        from leaderboard.catalog.selectors import benchmark_get
        from leaderboard.presentation.boards.selectors import leaderboard_get
        from leaderboard.review import services as review
        from leaderboard.review.rescoring import services as rescoring
        from leaderboard.submissions.models import Score

        t0 = time.perf_counter()
        item_id, reviewer_ids, stored_bytes = setup(count)
        print(f"Setup: {count} stored ImageNet submissions, {time.perf_counter() - t0:.1f} s")
        # What the re-scoring job builds once a re-score has published (untimed: off the
        # decision's path): the top-k index a decision's re-score reads (topk_index.py).
        from leaderboard.catalog.models import LabelSet

        t0 = time.perf_counter()
        segments = rescoring.label_set_topk_index_build(
            label_set=LabelSet.objects.get(benchmark__slug="imagenet", slug="real"))
        print(f"  the top-k index: {segments} segments built, {time.perf_counter() - t0:.1f} s "
              "(untimed)")
        queued: list[int] = []
        # Run the re-scoring here, synchronously, instead of queueing it for a worker.
        queue.task_send = lambda name, version_id, **_: queued.append(version_id)
        profile = os.environ.get("BENCH_PROFILE")
        t1 = time.perf_counter()
        for user in User.objects.filter(pk__in=reviewer_ids):
            with transaction.atomic():
                review.review_vote_cast(item_id=item_id, reviewer=user, verdict="correct")
        t_vote = time.perf_counter() - t1
        version = LabelSetVersion.objects.get(pk=queued[0])
        if profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
        t_rescore0, cpu_rescore0 = time.perf_counter(), time.process_time()
        with metered() as decision:
            rescored = rescoring.label_set_version_rescore(version_id=version.pk)
        t_rescore = time.perf_counter() - t_rescore0
        cpu_rescore = time.process_time() - cpu_rescore0  # without forked processes' own
        t_board0 = time.perf_counter()
        with metered() as board_counts:
            board = leaderboard_get(benchmark=benchmark_get(slug="imagenet"), sort="real")
        t_board = time.perf_counter() - t_board0
        t_decision = time.perf_counter() - t1
        if profile:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
        assert rescored == count and len(board.rows) == count
        assert Score.objects.filter(label_set_version=version).count() == count
        # A full re-score of every submission from its stored predictions, as any other
        # version gets: metered in this process, then timed in the configured processes.
        with override_settings(EVALSERVER_RESCORE_PROCESSES=1), metered() as full:
            t2, cpu2 = time.perf_counter(), time.process_time()
            assert rescoring._rescore_fully(version) == count
            t_full_one = time.perf_counter() - t2
            # CPU time: what a shared machine's load changes least
            cpu_full_one = time.process_time() - cpu2
        processes = settings.EVALSERVER_RESCORE_PROCESSES
        if profile == "full":
            profiler = cProfile.Profile()
            profiler.enable()
        t3 = time.perf_counter()
        assert rescoring._rescore_fully(version) == count
        t_full = time.perf_counter() - t3
        if profile == "full":
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        full_per = full.per(count)
        full_per["bytes"] = full.bytes / stored_bytes
        ok = _judge({"decision": decision.per(count), "board": board_counts.per(count),
                     "full": full_per}, judged=not args.quick)
        ms = 1000 / count
        print(f"  per submission (printed, not judged): decision re-score {t_rescore * ms:.3f} "
              f"ms, leaderboard read {t_board * ms:.3f} ms, full re-score {t_full_one * ms:.2f} "
              f"ms in 1 process, {t_full * ms:.2f} ms in {processes}; CPU time: decision "
              f"re-score {cpu_rescore * ms:.3f} ms (this process), full re-score in 1 process "
              f"{cpu_full_one * ms:.2f} ms")
        scale = TARGET_N / count
        # The votes and the new version cost the same whatever N; only the rest scales.
        for label, seconds, fixed, target in (
                ("accept one novel prediction (votes, version, re-score, leaderboard)",
                 t_decision, t_vote, TARGET_DECISION_S),
                (f"full re-score of every submission on a version ({processes} processes)",
                 t_full, 0.0, TARGET_FULL_S)):
            if count < 1000:  # too few: fixed costs and caching make a straight line lie
                print(f"  {label}: {seconds:.2f} s for {count} (run --submissions 10000 for the "
                      f"figure against the target < {target:g} s)")
                continue
            at_target = fixed + (seconds - fixed) * scale
            verdict = "met" if at_target <= target else "MISSED"
            print(f"  {label}: {seconds:.2f} s for {count}"
                  + (f" -> {at_target:.1f} s for {TARGET_N:,} (extrapolated)" if scale != 1
                     else "")
                  + f"  target < {target:g} s at {TARGET_N:,}: {verdict}")
        print(f"  (of which the three votes and the new version: {t_vote:.2f} s, the re-score "
              f"{t_rescore:.2f} s, reading the leaderboard {t_board:.2f} s; the full re-score "
              f"in 1 process {t_full_one:.2f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
