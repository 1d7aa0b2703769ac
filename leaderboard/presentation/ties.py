"""Statistical ties between adjacent rows of a leaderboard (workers/scoring/ties.py).

`leaderboard_ties_add` runs inside `selectors.leaderboard_get`, so it is computed once per
leaderboard generation and cached with the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderboard.catalog.models import Benchmark, LabelSetVersion
from leaderboard.submissions.models import Score, Submission
from workers.scoring import ties


def _usable(packed: bytes | None, score: dict[str, Any] | None) -> bytes | None:
    """The stored hits when they describe this score (one bit per evaluated example, as many
    set as it counts correct); None otherwise (a score from before hits were stored)."""
    if packed is None or not score:
        return None
    if len(packed) != -(-int(score["total"]) // 8) or ties.hits_count(packed) != score["correct"]:
        return None
    return packed


def leaderboard_ties_add(*, benchmark: Benchmark, version: LabelSetVersion, sort: str,
                         rows: Sequence[dict[str, Any]]) -> None:
    """Give each row (in displayed order: best on `sort` first) `tie_group`,
    `tied_with_previous` and `mcnemar_p` (the exact McNemar p-value against the row above)
    for the sort label set.

    Rows without a rank on `sort` (no score there) get `tie_group` None; a row without usable
    stored hits cannot be paired, so it ties neither neighbour (`mcnemar_p` None)."""
    ranked = [row for row in rows if sort in row["ranks"]]
    stored = dict(Score.objects.filter(
        label_set_version=version, submission__public=True,
        submission__status=Submission.Status.SCORED, submission__benchmark=benchmark,
    ).values_list("submission_id", "hits__bits"))
    packed = [_usable(None if (h := stored.get(row["submission_id"])) is None else bytes(h),
                      row["scores"].get(sort)) for row in ranked]
    for row in rows:
        row["tie_group"], row["tied_with_previous"], row["mcnemar_p"] = None, False, None
    if not ranked:
        return
    found = ties.tie_groups(ties.adjacent_discordant(packed))
    for row, group, tied, p in zip(ranked, found.groups, found.tied_with_previous,
                                   found.p_values, strict=True):
        row["tie_group"], row["tied_with_previous"], row["mcnemar_p"] = group, tied, p
