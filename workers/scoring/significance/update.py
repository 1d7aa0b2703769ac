"""rank_ub after a few rows of a board changed, from the result before (docs/metrics.md §10.4).

Whether row j is significantly better than row i depends on those two rows alone (their
accuracies, counts and hits), so a row that comes (scored, made public, re-scored) or goes
(hidden, withdrawn, re-scored) changes only its own pairs: every other row's rank_ub gains
(or loses) one where that row is significantly better than it, and the new row's own rank_ub
counts the rows better than it. One AND + popcount of its packed hits against every row gives
its pairs: O(rows x examples) per changed row instead of O(rows² x examples) for the board.

`HitMatrix` holds a label-set version's packed hit vectors as one uint8 matrix (the worker
keeps one per version, leaderboard/submissions/board_significance_hits.py), so neither path reads or
joins the vectors again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from workers.scoring.significance import ALPHA, mcnemar_p
from workers.scoring.significance.pairs import popcount_and


class HitMatrix:
    """Packed hit vectors of one width, one row each, found by digest; grows by doubling."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.index: dict[str, int] = {}
        self._bits = np.zeros((0, width), dtype=np.uint8)

    def __len__(self) -> int:
        return len(self.index)

    @property
    def nbytes(self) -> int:
        return int(self._bits.nbytes)

    @property
    def bits(self) -> np.ndarray:
        return self._bits[:len(self.index)]

    def add(self, items: Iterable[tuple[str, bytes]]) -> None:
        new = {d: b for d, b in items if d not in self.index and len(b) == self.width}
        need = len(self.index) + len(new)
        if need > len(self._bits):
            grown = np.zeros((max(need, 2 * len(self._bits), 64), self.width), dtype=np.uint8)
            grown[:len(self.index)] = self.bits
            self._bits = grown
        for digest, vector in new.items():
            self._bits[len(self.index)] = np.frombuffer(vector, dtype=np.uint8)
            self.index[digest] = len(self.index)


class RowState(NamedTuple):
    """What a row's pairs depend on: its hits, accuracy and count (None: not paired). A
    tuple: a refresh makes and compares 10,000 of them twice."""

    key: int
    digest: str | None
    accuracy: float
    correct: int | None


def rank_ub_update(*, before: Sequence[RowState], rank_ub_before: Sequence[int | None],
                   after: Sequence[RowState], hits: HitMatrix, max_changes: int,
                   alpha: float = ALPHA) -> list[int | None] | None:
    """rank_ub of the rows `after` (board order) from `rank_ub_before`, that of the rows
    `before` (both of paired rows of the width of `hits`). None when more than `max_changes`
    paired rows came or went, or a changed row's hits are not in `hits`: compute in full."""
    old = {r.key: r for r in before}
    new = {r.key: r for r in after}
    kept = [r for r in after if r.correct is not None and old.get(r.key) == r]
    gone = [r for r in before if r.correct is not None and new.get(r.key) != r]
    came = [r for r in after if r.correct is not None and old.get(r.key) != r]
    if len(gone) + len(came) > max_changes:
        return None
    if any(r.digest not in hits.index for r in (*kept, *gone, *came)):
        return None
    previous = dict(zip((r.key for r in before), rank_ub_before, strict=True))
    if any(previous[r.key] is None for r in kept):
        return None  # a stored result that does not match its rows: start over
    at = np.array([hits.index[str(r.digest)] for r in kept], dtype=np.int64)
    s = np.array([r.correct for r in kept], dtype=np.int64)
    acc = np.array([r.accuracy for r in kept], dtype=np.float64)
    ub = np.array([previous[r.key] for r in kept], dtype=np.int64)
    came_ub: dict[int, int] = {}
    came_at = np.array([hits.index[str(r.digest)] for r in came], dtype=np.int64)
    came_s = np.array([r.correct for r in came], dtype=np.int64)
    came_acc = np.array([r.accuracy for r in came], dtype=np.float64)
    for row, sign in [*((r, -1) for r in gone), *((r, 1) for r in came)]:
        both_all = popcount_and(hits.bits, hits.bits[hits.index[str(row.digest)]])
        s_row = int(row.correct or 0)
        both = both_all[at]
        p = mcnemar_p(s_row - both, s - both)
        ub += sign * ((row.accuracy > acc) & (s_row > s) & (p < alpha))
        if sign > 0:  # its own: the kept rows and the other new rows better than it
            p_came = mcnemar_p(s_row - both_all[came_at], came_s - both_all[came_at])
            came_ub[row.key] = 1 + int(((acc > row.accuracy) & (s > s_row) & (p < alpha)).sum()
                                       + ((came_acc > row.accuracy) & (came_s > s_row)
                                          & (p_came < alpha)).sum())
    result = dict(zip((r.key for r in kept), ub.tolist(), strict=True)) | came_ub
    return [result[r.key] if r.correct is not None else None for r in after]


def p_above_update(*, before: Sequence[RowState], p_above_before: Sequence[float | None],
                   after: Sequence[RowState], hits: HitMatrix) -> list[float | None]:
    """p_above of the rows `after`: that stored for a row whose row above is the same as
    before (both unchanged), tested again for the others (their neighbour changed)."""
    old = {r.key: r for r in before}
    position = {r.key: i for i, r in enumerate(before)}
    result: list[float | None] = [None] * len(after)
    again: list[int] = []
    for k in range(1, len(after)):
        above, row = after[k - 1], after[k]
        if above.correct is None or row.correct is None:
            continue
        if (old.get(above.key) == above and old.get(row.key) == row
                and position[row.key] == position[above.key] + 1):
            result[k] = p_above_before[position[row.key]]
        else:
            again.append(k)
    if again:
        above_at = hits.bits[[hits.index[str(after[k - 1].digest)] for k in again]]
        row_at = hits.bits[[hits.index[str(after[k].digest)] for k in again]]
        both = np.bitwise_count(np.bitwise_and(above_at, row_at)).sum(axis=1, dtype=np.int64)
        s_above = np.array([after[k - 1].correct for k in again], dtype=np.int64)
        s_row = np.array([after[k].correct for k in again], dtype=np.int64)
        for k, p in zip(again, mcnemar_p(s_above - both, s_row - both).tolist(), strict=True):
            result[k] = float(p)
    return result
