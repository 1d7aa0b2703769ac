"""Which rows of a public board are significantly better than which (docs/metrics.md §10.3):
computed by the worker when scores change, stored per label-set version (BoardSignificance),
read by the board build. Never computed in a web request: a request that finds none (or one
for other rows) shows no rank_ub and asks the worker for it (`board_significance_request`).

Where it is refreshed: by the task `leaderboard.tasks.cpu.refresh_board_significance`, which a
submission's scoring and a re-scoring schedule after they commit (`board_significance_schedule`:
at once, once for a burst), and a visibility change and a stale board queue. A refresh starts
from the stored result and updates the pairs of the rows that came or went; it computes every
undecided pair only when many changed (a new label-set version: docs/metrics.md §10.4).

A stored result names the rows it was computed from (`significance_fingerprint`: ids, hit
vectors and ranks in board order), so it is used only for exactly those rows: a result
computed from rows since changed is never shown, whatever order workers finish in.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache, caches
from django.db import transaction

from leaderboard import queue
from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.catalog.selectors import label_set_versions_current
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.submissions import board_significance_hits
from leaderboard.submissions.board_significance_hits import VersionHits
from leaderboard.submissions.models import BoardSignificance, Score, Submission
from workers.scoring import significance
from workers.scoring.significance import pairs as significance_pairs
from workers.scoring.significance import update as significance_update
from workers.scoring.significance.update import RowState
from workers.scoring.stats import competition_ranks

log = logging.getLogger(__name__)


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
    # the ranks `workers.scoring.ranking.ranks` gives, without a record per row (a refresh
    # orders 10,000 rows twice)
    ranks = competition_ranks(np.array([acc for _, _, acc in rows], dtype=np.float64))
    ids = np.array([sub_id for sub_id, _, _ in rows], dtype=np.int64)
    return [BoardRow(rows[i][0], rows[i][1], int(ranks[i]))
            for i in np.lexsort((ids, ranks)).tolist()]


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


# Refreshes that update the stored result from the rows that came and went instead of
# computing every pair (docs/metrics.md §10.4), while at most this many (and a thirty-second of
# the board) changed: each costs one pass over the board's hits, a full one about 30.
_MAX_CHANGES = 16


def _states(rows: Sequence[BoardRow], figures: dict[int, tuple[float, int, int]],
            hits: VersionHits) -> list[RowState]:
    """Each row's state; `correct` None where its hits cannot be paired: none stored, not
    those of this score (one bit per evaluated example, as many set as it counts correct: a
    score from before hits were stored has none) or not of the board's width."""
    states = []
    for row in rows:
        accuracy, correct, total = figures[row.submission_id]
        seen = hits.seen.get(row.hits_digest or "")
        paired = (seen is not None and seen == (-(-total // 8), correct)
                  and seen[0] == hits.matrix.width)
        states.append(RowState(row.submission_id, row.hits_digest, accuracy,
                               correct if paired else None))
    return states


def _hits(version: LabelSetVersion, rows: Sequence[BoardRow],
          figures: dict[int, tuple[float, int, int]], before: Sequence[RowState]
          ) -> VersionHits:
    """The vectors of the rows (and of those stored before, to take them off), of the width
    most of the rows' own vectors have (`significance.board_significance`'s rule)."""
    digests = {r.hits_digest for r in rows if r.hits_digest} | {
        r.digest for r in before if r.digest}
    guess = Counter(-(-figures[r.submission_id][2] // 8) for r in rows if r.hits_digest)
    width = guess.most_common(1)[0][0] if guess else 0
    hits = board_significance_hits.version_hits(version_id=version.pk, digests=digests, width=width)
    own = Counter(seen[0] for r in rows
                  if (seen := hits.seen.get(r.hits_digest or "")) is not None
                  and seen == (-(-figures[r.submission_id][2] // 8), figures[r.submission_id][1]))
    if own and own.most_common(1)[0][0] != width:
        hits = board_significance_hits.version_hits(version_id=version.pk, digests=digests,
                                              width=own.most_common(1)[0][0])
    return hits


def _compute(version: LabelSetVersion, rows: Sequence[BoardRow],
             figures: dict[int, tuple[float, int, int]],
             stored: tuple[list[int], list[int | None], dict[str, Any], list[float | None]] | None
             ) -> tuple[significance.BoardSignificance, dict[str, Any]]:
    """The significance of the rows, updated from `stored` (submission ids, rank_ub, state,
    p_above) when few rows changed, else in full; and the state to store with it."""
    before: list[RowState] = []
    if stored is not None and stored[2].get("rows") is not None:
        before = [RowState(int(key), digest, float(acc), correct) for key, (digest, acc, correct)
                  in zip(stored[0], stored[2]["rows"], strict=True)]
    hits = _hits(version, rows, figures, before)
    after = _states(rows, figures, hits)
    rank_ub = None
    if before and stored is not None and stored[2].get("width") == hits.matrix.width:
        rank_ub = significance_update.rank_ub_update(
            before=before, rank_ub_before=stored[1], after=after, hits=hits.matrix,
            max_changes=max(_MAX_CHANGES, len(rows) // 32))
    state = {"width": hits.matrix.width,
             "rows": [[r.digest, r.accuracy, r.correct] for r in after]}
    if rank_ub is not None and stored is not None:
        return significance.BoardSignificance(rank_ub, significance_update.p_above_update(
            before=before, p_above_before=stored[3], after=after, hits=hits.matrix)), state
    at = [hits.matrix.index[str(r.digest)] if r.correct is not None else None for r in after]
    return significance_pairs.board_significance_pruned(
        hits.matrix.bits, at, [r.accuracy for r in after],
        threads=settings.EVALSERVER_SIGNIFICANCE_THREADS), state


def version_significance_refresh(*, version: LabelSetVersion, generation: int) -> bool:
    """Compute and store the significance of the public board on `version` unless what is
    stored is for its current rows; returns whether it stored anything."""
    for _ in range(3):  # rows changed while computing: compute again from the new ones
        rows, figures = _board_rows(version)
        fingerprint = significance_fingerprint(rows)
        stored = BoardSignificance.objects.filter(label_set_version=version).values_list(
            "fingerprint", "submission_ids", "rank_ub", "state", "p_above").first()
        if stored is not None and stored[0] == fingerprint:
            return False
        result, state = _compute(version, rows, figures,
                                 None if stored is None else stored[1:])
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
                    "rank_ub": result.rank_ub, "p_above": result.p_above, "state": state})
        return True
    return False


def board_significance_refresh(*, benchmark_id: int) -> int:
    """The worker's job when a benchmark's scores or public rows change: refresh the stored
    significance of every current label-set version; when any changed, bump the leaderboard
    generation so cached boards are built again with it. Returns how many were stored."""
    _queued_mark(benchmark_id, add=False)  # scorings committed from now on queue another
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
    """After a job has committed new scores: queue the refresh, once for a burst.

    EVALSERVER_SIGNIFICANCE_DELAY 0 (the default): at once, unless one is queued and has not
    started yet (`board_significance_refresh` drops the mark first): that one reads the rows
    after this commit, so it covers it. An update costs one pass over the board's hits
    (docs/metrics.md §10.4), so rank_ub follows a scoring within a second.

    A delay d > 0: the refresh runs d seconds later, one message per benchmark per d (a
    scoring committed while the key lives committed before the key expires, which is before
    the queued refresh runs: its countdown starts after the key is set). That was the only
    way while every refresh computed all pairs: refreshing after every scoring made two
    workers' refreshes queue on the same version rows (bench/cluster.py)."""
    delay = settings.EVALSERVER_SIGNIFICANCE_DELAY
    if delay <= 0:
        if _queued_mark(benchmark_id, add=True):
            queue.board_significance_queue(benchmark_id=benchmark_id)
    elif cache.add(f"significance-scheduled:{benchmark_id}", 1, timeout=delay):
        queue.board_significance_queue(benchmark_id=benchmark_id, countdown=delay)


def _queued_mark(benchmark_id: int, *, add: bool) -> bool:
    """Set (add: whether it was not set) or drop the mark of a queued refresh, in the cache
    every process shares (Redis; `default` is each process's own). A lost message keeps it
    at most its timeout, then the next scoring queues again; Redis unavailable: queue anyway
    (a scoring that has committed must not fail now)."""
    key = f"significance-queued:{benchmark_id}"
    try:
        if add:
            return bool(caches["throttle"].add(key, 1, timeout=60))
        caches["throttle"].delete(key)
    except Exception:  # redis's ConnectionError, TimeoutError: it is only an optimisation
        log.warning("the significance refresh mark of %s is not shared", benchmark_id,
                    exc_info=True)
    return True


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
