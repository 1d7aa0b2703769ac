"""Tests for the incremental and pruned significance (workers/scoring/significance/update.py,
significance_pairs.py; docs/metrics.md §10.4): on random boards (ties, equal accuracies and
counts, rows without hits, rows added, removed and re-scored) both give exactly what the
full computation over every pair gives (`significance.board_significance`), and the bound
that prunes pairs holds against SciPy's exact binomial test."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from workers.scoring.significance import board_significance, pack_hits
from workers.scoring.significance.pairs import (
    _least_possible,
    _least_sure,
    board_significance_pruned,
    p_at_extremes,
)
from workers.scoring.significance.update import (
    HitMatrix,
    RowState,
    p_above_update,
    rank_ub_update,
)


@dataclass
class Row:
    key: int
    hits: np.ndarray | None
    accuracy: float


def random_rows(rng: np.random.Generator, keys: list[int], examples: int) -> list[Row]:
    """Rows of correlated hits (a shared difficulty, so some pairs are far apart and some
    close), a few without hits, accuracies that mostly follow the counts, some tied, some
    (as multi-label class means do) not following them."""
    difficulty = rng.random(examples)
    rows = []
    for key in keys:
        skill = rng.choice([rng.random(), 0.5])  # many equal skills: equal counts
        hits = difficulty + rng.normal(0, rng.choice([0.05, 0.3]), examples) < skill
        kind = rng.integers(0, 8)
        accuracy = (float(hits.mean()) if kind > 1 else float(rng.choice([0.5, 0.25]))
                    if kind == 1 else float(hits.mean()) + float(rng.normal(0, 0.05)))
        rows.append(Row(key, None if rng.random() < 0.1 else hits, accuracy))
    rows.sort(key=lambda r: (-r.accuracy, r.key))  # board order
    return rows


def reference(rows: list[Row]) -> tuple[list[int | None], list[float | None]]:
    result = board_significance([None if r.hits is None else pack_hits(r.hits) for r in rows],
                                [r.accuracy for r in rows])
    return result.rank_ub, result.p_above


def matrix_of(*boards: list[Row], rng: np.random.Generator) -> HitMatrix:
    vectors = {f"{r.key}:{pack_hits(r.hits).hex()}": pack_hits(r.hits)
               for rows in boards for r in rows if r.hits is not None}
    items = list(vectors.items())
    rng.shuffle(items)  # the matrix's order is not the board's
    width = len(items[0][1]) if items else 1
    matrix = HitMatrix(width)
    matrix.add(items[:len(items) // 2])
    matrix.add(items)  # twice for some: added once
    return matrix


def digest(row: Row) -> str | None:
    return None if row.hits is None else f"{row.key}:{pack_hits(row.hits).hex()}"


def states(rows: list[Row]) -> list[RowState]:
    return [RowState(r.key, digest(r), r.accuracy,
                     None if r.hits is None else int(r.hits.sum())) for r in rows]


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(0, 40),
       examples=st.integers(1, 120))
def test_it_prunes_to_the_full_computation_on_random_boards(
        seed: int, count: int, examples: int) -> None:
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, list(range(count)), examples)
    hits = matrix_of(rows, rng=rng)
    at = [None if r.hits is None else hits.index[str(digest(r))] for r in rows]
    for threads in (1, 2):
        got = board_significance_pruned(hits.bits, at, [r.accuracy for r in rows],
                                        threads=threads)
        assert (got.rank_ub, got.p_above) == reference(rows)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(0, 30),
       examples=st.integers(1, 100), removed=st.integers(0, 4), rescored=st.integers(0, 4),
       added=st.integers(0, 4))
def test_it_updates_to_the_full_computation_when_rows_come_go_and_change(
        seed: int, count: int, examples: int, removed: int, rescored: int, added: int) -> None:
    rng = np.random.default_rng(seed)
    before = random_rows(rng, list(range(count)), examples)
    keys = [r.key for r in before]
    rng.shuffle(keys)
    gone, changed = set(keys[:removed]), set(keys[removed:removed + rescored])
    fresh = random_rows(rng, [*changed, *range(count, count + added)], examples)
    after = sorted([r for r in before if r.key not in gone | changed] + fresh,
                   key=lambda r: (-r.accuracy, r.key))
    hits = matrix_of(before, after, rng=rng)
    rank_ub_before, p_above_before = reference(before)

    got = rank_ub_update(before=states(before), rank_ub_before=rank_ub_before,
                         after=states(after), hits=hits, max_changes=100)
    got_p = p_above_update(before=states(before), p_above_before=p_above_before,
                           after=states(after), hits=hits)

    assert (got, got_p) == reference(after)


def test_it_leaves_a_big_change_to_the_full_computation() -> None:
    rng = np.random.default_rng(1)
    before = random_rows(rng, list(range(10)), 50)
    after = random_rows(rng, list(range(10)), 50)  # every row re-scored
    hits = matrix_of(before, after, rng=rng)
    assert rank_ub_update(before=states(before), rank_ub_before=reference(before)[0],
                          after=states(after), hits=hits, max_changes=5) is None


@settings(max_examples=300, deadline=None)
@given(examples=st.integers(1, 60), data=st.data())
def test_it_bounds_every_possible_p_value_by_the_counts_alone(
        examples: int, data: st.DataObject) -> None:
    s_lo = data.draw(st.integers(0, examples))
    s_hi = data.draw(st.integers(s_lo, examples))
    p_least, p_most = p_at_extremes(np.array([s_hi]), np.array([s_lo]), examples)
    # every overlap the counts allow, tested by SciPy
    possible = [binomtest(s_hi - both, s_hi + s_lo - 2 * both).pvalue
                if s_hi + s_lo - 2 * both else 1.0
                for both in range(max(0, s_hi + s_lo - examples), s_lo + 1)]
    assert abs(min(possible) - p_least[0]) < 1e-12
    assert abs(max(possible) - p_most[0]) < 1e-12


def test_it_finds_the_least_counts_that_decide_a_pair_like_a_search_over_scipy() -> None:
    examples = 40
    for s_lo in range(examples + 1):
        sure = [t for t in range(s_lo + 1, examples + 1) if all(
            binomtest(t - both, t + s_lo - 2 * both).pvalue < 0.05
            for both in range(max(0, t + s_lo - examples), s_lo + 1))]
        expected = sure[0] if sure else examples + 1
        # and every count above the first is sure too (the bisection's premise)
        assert sure == list(range(expected, examples + 1))
        assert _least_sure(np.array([s_lo]), examples, 0.05).tolist() == [expected]
    # 2 * 2**-d < 0.05 from d = 6: no pair closer than 6 examples can be significant
    assert _least_possible(examples, 0.05) == 6
