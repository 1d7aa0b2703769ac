"""rank_ub and the McNemar p-value against the row above on a board (docs/metrics.md §10.3),
read from what the worker stored (leaderboard/submissions/board_significance.py), never computed
here: `leaderboard_significance_add` runs inside `boards.leaderboard_get`, once per
leaderboard generation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.submissions.board_significance import (
    BoardRow,
    board_significance_get,
    board_significance_request,
    significance_fingerprint,
)


def leaderboard_significance_add(*, benchmark: Benchmark, version: LabelSetVersion,
                                 current: bool, sort: str, rows: Sequence[dict[str, Any]],
                                 digests: Mapping[int, str | None]) -> bool:
    """Give each row (in board order) `rank_ub` and `mcnemar_p` on the sort label set from
    the stored result for exactly these rows (`digests`: each row's hits on `version`).
    Returns False when there is none: every row gets None, and when `version` is current the
    worker is asked to compute it (a pinned older version is never computed)."""
    ranked = [row for row in rows if sort in row["ranks"]]
    fingerprint = significance_fingerprint([
        BoardRow(row["submission_id"], digests.get(row["submission_id"]), row["ranks"][sort])
        for row in ranked])
    stored = board_significance_get(version=version, fingerprint=fingerprint)
    for row in rows:
        row["rank_ub"], row["mcnemar_p"] = stored.get(row["submission_id"], (None, None)) \
            if stored is not None else (None, None)
    if stored is None and ranked and current:
        board_significance_request(benchmark_id=benchmark.pk,
                                   generation=benchmark.leaderboard_generation)
    return stored is not None or not ranked
