"""The tie-group marks of the leaderboard table (selectors_ties computes the groups)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any


def _p(value: float) -> str:
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def tie_marks(rows: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """submission id -> {group, size, title} for each row of a tie group of two or more rows
    (a row that ties nobody gets no mark). Over the whole board, so a group that spans two
    pages is marked on both."""
    sizes = Counter(row["tie_group"] for row in rows if row.get("tie_group") is not None)
    marks: dict[int, dict[str, Any]] = {}
    for row in rows:
        group = row.get("tie_group")
        if group is None or sizes[group] < 2:
            continue
        p = row.get("mcnemar_p")
        if p is None:
            against = "the first row of the group"
        elif row["tied_with_previous"]:
            against = f"not distinguishable from the row above (McNemar {_p(p)})"
        else:
            against = f"the first row of the group (against the row above: McNemar {_p(p)})"
        marks[row["submission_id"]] = {
            "group": group, "size": sizes[group],
            "title": f"Tie group {group} ({sizes[group]} rows): {against}",
        }
    return marks
