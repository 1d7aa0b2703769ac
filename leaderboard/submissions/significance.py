"""Which rows of a public board are significantly better than which (docs/metrics.md §10.3):
computed by the worker when scores change, stored per label-set version (BoardSignificance),
read by the board build. Never computed in a web request: a request that finds none (or one
for other rows) shows no rank_ub and asks the worker for it (`board_significance_request`).

Where it is refreshed: by the task `workers.tasks.refresh_board_significance`, which a
submission's scoring and a re-scoring schedule after they commit (`board_significance_schedule`:
a few seconds later, once for a burst), and a visibility change and a stale board queue.

A stored result names the rows it was computed from (`significance_fingerprint`: ids, hit
vectors and ranks in board order), so it is used only for exactly those rows: a result
computed from rows since changed is never shown, whatever order workers finish in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from leaderboard import queue
from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.catalog.selectors import label_set_versions_current
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.submissions.models import BoardSignificance, HitVector, Score, Submission
from workers.scoring import leaderboard as core_leaderboard
from workers.scoring import significance


@dataclass(frozen=True)
class BoardRow:
    submission_id: int
    hits_digest: str | None
    rank: int


def significance_fingerprint(rows: Sequence[BoardRow]) -> str:
    """SHA-256 of the rows in board order: what a stored result was computed from."""
    text = "\n".join(f"{r.submission_id}:{r.hits_digest or '-'}:{r.rank}" for r in rows)
    return hashlib.sha256(text.encode()).hexdigest()


def board_rows_order(rows: Sequence[tuple[int, str | None, float]]) -> list[BoardRow]:
    """(submission id, hits digest, accuracy) of the rows with a score, in board order:
    competition rank on the accuracy, then submission id (as the board,
    leaderboard/presentation/boards/selectors.py)."""
    ranks = core_leaderboard.ranks([{"x": {"accuracy": acc}} for _, _, acc in rows], "x")
    ordered = sorted(zip(rows, ranks.tolist(), strict=True), key=lambda t: (t[1], t[0][0]))
    return [BoardRow(sub_id, digest, int(rank)) for (sub_id, digest, _), rank in ordered]


def _board_rows(version: LabelSetVersion) -> tuple[list[BoardRow], dict[int, tuple[float, int,
                                                                                   int]]]:
    """The public board's rows on `version` in order, and each one's (accuracy, correct, total)."""
    scores = list(Score.objects.filter(
        label_set_version=version, submission__public=True, accuracy__isnull=False,
        submission__status=Submission.Status.SCORED,
        submission__benchmark_id=version.label_set.benchmark_id,
    ).values_list("submission_id", "hits_id", "accuracy", "correct", "total"))
    # accuracy is not null here (filtered above)
    rows = board_rows_order([(s, d, float(a or 0.0)) for s, d, a, _, _ in scores])
    return rows, {s: (float(a or 0.0), c, t) for s, _, a, c, t in scores}


def _compute(version: LabelSetVersion, rows: Sequence[BoardRow],
             figures: dict[int, tuple[float, int, int]]) -> significance.BoardSignificance:
    digests = {r.hits_digest for r in rows if r.hits_digest}
    bits = {d: bytes(b) for d, b in HitVector.objects.filter(digest__in=digests)
            .values_list("digest", "bits")}
    packed: list[bytes | None] = []
    for row in rows:
        vector = bits.get(row.hits_digest or "")
        _, correct, total = figures[row.submission_id]
        # Only hits that describe this score (one bit per evaluated example, as many set as
        # it counts correct) are paired; a score from before hits were stored has none.
        if vector is not None and (len(vector) != -(-total // 8)
                                   or significance.hits_count(vector) != correct):
            vector = None
        packed.append(vector)
    return significance.board_significance(
        packed, [figures[r.submission_id][0] for r in rows])


def version_significance_refresh(*, version: LabelSetVersion, generation: int) -> bool:
    """Compute and store the significance of the public board on `version` unless what is
    stored is for its current rows; returns whether it stored anything."""
    for _ in range(3):  # rows changed while computing: compute again from the new ones
        rows, figures = _board_rows(version)
        fingerprint = significance_fingerprint(rows)
        stored = BoardSignificance.objects.filter(label_set_version=version).values_list(
            "fingerprint", flat=True).first()
        if stored == fingerprint:
            return False
        result = _compute(version, rows, figures)
        with transaction.atomic():
            # The version row locked: two workers store one after the other, each after
            # checking that its rows are still the board's (PostgreSQL; SQLite has one writer).
            # FOR NO KEY UPDATE of the version's row alone: a plain FOR UPDATE through
            # .first() also locked the benchmark row its ordering joins (which a scoring
            # updates) and blocked the scorings' Score inserts (their foreign-key checks
            # take a key-share lock): two workers deadlocked.
            LabelSetVersion.objects.select_for_update(no_key=True, of=("self",)).filter(
                pk=version.pk).order_by("pk").first()
            if significance_fingerprint(_board_rows(version)[0]) != fingerprint:
                continue
            BoardSignificance.objects.update_or_create(
                label_set_version=version, defaults={
                    "fingerprint": fingerprint, "generation": generation,
                    "submission_ids": [r.submission_id for r in rows],
                    "rank_ub": result.rank_ub, "p_above": result.p_above})
        return True
    return False


def board_significance_refresh(*, benchmark_id: int) -> int:
    """The worker's job when a benchmark's scores or public rows change: refresh the stored
    significance of every current label-set version; when any changed, bump the leaderboard
    generation so cached boards are built again with it. Returns how many were stored."""
    benchmark = Benchmark.objects.get(pk=benchmark_id)
    stored = sum(version_significance_refresh(version=version,
                                              generation=benchmark.leaderboard_generation)
                 for version in label_set_versions_current(benchmark=benchmark)
                 # pairwise discordance on hidden labels is never shown (docs/metrics.md §17)
                 if not version.label_set.labels_hidden)
    if stored:
        benchmark_leaderboard_touch(benchmark_id=benchmark_id)
    return stored


def board_significance_schedule(*, benchmark_id: int) -> None:
    """After a job has committed new scores: queue the refresh to run
    EVALSERVER_SIGNIFICANCE_DELAY seconds later, once for a burst. Refreshing inline in every
    scoring made two workers' refreshes queue on the same version rows and bump the
    generation under each other's scorings (bench/cluster.py: two hosts slower than one).

    One message per benchmark per delay and process: a scoring committed while the key
    lives committed before the key expires, which is before the queued refresh runs (its
    countdown starts after the key is set), so the refresh sees it."""
    delay = settings.EVALSERVER_SIGNIFICANCE_DELAY
    if delay <= 0:
        queue.board_significance_queue(benchmark_id=benchmark_id)
    elif cache.add(f"significance-scheduled:{benchmark_id}", 1, timeout=delay):
        queue.board_significance_queue(benchmark_id=benchmark_id, countdown=delay)


def board_significance_request(*, benchmark_id: int, generation: int) -> None:
    """Ask the worker to refresh (queued by name after commit), at most once a minute per
    benchmark and generation."""
    if cache.add(f"significance-requested:{benchmark_id}:{generation}", 1, timeout=60):
        queue.board_significance_queue(benchmark_id=benchmark_id)


def board_significance_get(*, version: LabelSetVersion, fingerprint: str
                           ) -> dict[int, tuple[int | None, float | None]] | None:
    """submission id -> (rank_ub, p against the row above) stored for `version`, when it was
    computed from the rows `fingerprint` names; None otherwise (not computed yet)."""
    row = BoardSignificance.objects.filter(label_set_version=version, fingerprint=fingerprint
                                           ).values_list("submission_ids", "rank_ub",
                                                         "p_above").first()
    if row is None:
        return None
    ids, ubs, ps = row
    return {int(i): (ub, p) for i, ub, p in zip(ids, ubs, ps, strict=True)}
