"""Tests for workers.scoring.ties: the exact McNemar p-value, packed hit vectors and the tie
groups of adjacent leaderboard rows. Expected p-values come from a hand computation with
math.comb (never from scipy); the groups come from hand-made cases."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tests.workers.scoring.realdata import MODELS, PREDICTIONS_DIR, SUFFIX
from workers.scoring import ties


def exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar: 2 * P[X <= min(b, c)], X ~ Bin(b + c, 1/2), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, k) for k in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(("b", "c", "expected"), [
    (0, 0, 1.0),
    (0, 5, 2 / 32),  # 0.0625: not significant at 5%
    (5, 0, 2 / 32),
    (0, 6, 2 / 64),  # 0.03125: significant
    (1, 9, 2 * (1 + 10) / 1024),
    (3, 3, 1.0),
    (2, 3, 1.0),  # 2 * (1 + 5 + 10) / 32 = 1
    (4, 0, 2 / 16),
    (8, 0, 2 / 256),
])
def test_it_computes_the_exact_mcnemar_p_value_by_hand(b: int, c: int, expected: float) -> None:
    assert ties.mcnemar_p(b, c) == pytest.approx(expected, rel=1e-12, abs=0)
    assert ties.mcnemar_p(b, c) == pytest.approx(exact_p(b, c), rel=1e-12, abs=0)


@pytest.mark.parametrize(("b", "c"), [(10, 20), (120, 170), (57, 43), (300, 300), (0, 40),
                                      (1500, 1610), (31, 1)])
def test_it_matches_math_comb_on_larger_counts(b: int, c: int) -> None:
    assert ties.mcnemar_p(b, c) == pytest.approx(exact_p(b, c), rel=1e-9, abs=1e-300)


def test_it_computes_many_p_values_at_once_like_one_at_a_time() -> None:
    rng = np.random.default_rng(7)
    b = rng.integers(0, 400, size=300)
    c = rng.integers(0, 400, size=300)
    b[:20], c[:20] = 0, 0  # b + c == 0
    c[20:40] = b[20:40]  # b == c
    many = ties.mcnemar_p_many(b, c)
    assert many.tolist() == [ties.mcnemar_p(int(x), int(y)) for x, y in zip(b, c, strict=True)]
    assert many[:20].tolist() == [1.0] * 20
    assert many[20:40].tolist() == [1.0] * 20
    for x, y, p in zip(b[40:60], c[40:60], many[40:60], strict=True):
        assert p == pytest.approx(exact_p(int(x), int(y)), rel=1e-9, abs=1e-300)


def test_it_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="b=-1"):
        ties.mcnemar_p(-1, 3)


@pytest.mark.parametrize("size", [1, 7, 8, 9, 68, 2000, 10_000, 50_000])
def test_it_packs_and_unpacks_hit_vectors_of_any_length(size: int) -> None:
    hits = np.random.default_rng(size).random(size) < 0.7
    packed = ties.pack_hits(hits)
    assert len(packed) == -(-size // 8)
    assert ties.unpack_hits(packed, size).tolist() == hits.tolist()
    assert ties.hits_count(packed) == int(hits.sum())


def test_it_counts_discordant_examples_by_hand() -> None:
    first = np.array([1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1], dtype=bool)
    second = np.array([1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 1], dtype=bool)
    # only first: 1, 5, 8; only second: 3
    assert ties.discordant_counts(first, second) == (3, 1)
    assert ties.packed_discordant(ties.pack_hits(first), ties.pack_hits(second)) == (3, 1)
    assert ties.packed_discordant(ties.pack_hits(second), ties.pack_hits(first)) == (1, 3)
    assert ties.packed_discordant(ties.pack_hits(first), ties.pack_hits(first[:8])) is None
    with pytest.raises(ValueError, match="differ in shape"):
        ties.discordant_counts(first, second[:5])


def test_it_counts_adjacent_pairs_across_stacked_blocks_and_skips_missing_rows() -> None:
    rng = np.random.default_rng(3)
    hits = [rng.random(1001) < rng.uniform(0.3, 0.95) for _ in range(1300)]
    packed: list[bytes | None] = [ties.pack_hits(h) for h in hits]
    packed[100] = None  # scored before hits were stored
    packed[700] = ties.pack_hits(hits[700][:999])  # a different length: not comparable
    pairs = ties.adjacent_discordant(packed)
    assert len(pairs) == 1299
    for i, pair in enumerate(pairs):
        if i in (99, 100, 699, 700):
            assert pair is None
        else:
            assert pair == ties.discordant_counts(hits[i], hits[i + 1])
    assert ties.adjacent_discordant([]) == []
    assert ties.adjacent_discordant([None, None]) == [None]
    assert ties.adjacent_discordant([packed[0]]) == []


def test_it_chains_rows_into_tie_groups_from_the_top() -> None:
    # rows 0..5: 0-1 identical (p = 1), 1-2 (0, 10) p = 2/1024, 2-3 (2, 3) p = 1,
    # 3-4 untestable, 4-5 (0, 7) p = 2/128
    found = ties.tie_groups([(0, 0), (0, 10), (2, 3), None, (0, 7)])
    assert found.groups == [1, 1, 2, 2, 3, 4]
    assert found.tied_with_previous == [False, True, False, True, False, False]
    assert found.p_values == [None, 1.0, pytest.approx(2 / 1024, rel=1e-12), 1.0, None,
                              pytest.approx(2 / 128, rel=1e-12)]


def test_it_ties_at_exactly_alpha_and_not_below() -> None:
    assert ties.tie_groups([(0, 5)]).groups == [1, 1]  # p = 0.0625 >= 0.05
    assert ties.tie_groups([(0, 6)]).groups == [1, 2]  # p = 0.03125
    assert ties.tie_groups([(0, 5)], alpha=0.0625).tied_with_previous == [False, True]
    assert ties.tie_groups([(0, 5)], alpha=0.07).tied_with_previous == [False, False]


def test_it_chains_transitively_even_when_the_ends_differ() -> None:
    a = np.ones(20, dtype=bool)
    b = a.copy()
    b[:4] = False
    c = a.copy()
    c[:8] = False
    packed = [ties.pack_hits(h) for h in (a, b, c)]
    pairs = ties.adjacent_discordant(packed)
    assert pairs == [(4, 0), (4, 0)]  # p = 2/16 = 0.125 each
    assert ties.mcnemar_p(*ties.discordant_counts(a, c)) == 2 / 256  # the ends alone differ
    found = ties.tie_groups(pairs)
    assert found.groups == [1, 1, 1]
    assert found.p_values == [None, 0.125, 0.125]


def test_it_makes_one_group_for_a_single_row() -> None:
    found = ties.tie_groups([])
    assert (found.groups, found.tied_with_previous, found.p_values) == ([1], [False], [None])


def test_it_ties_real_cifar10_models_like_a_direct_computation() -> None:
    """Three published CIFAR-10 models on the original test labels, compared directly."""
    import json

    labels = np.load(PREDICTIONS_DIR.parents[0] / "original_labels.npy")
    hits = {m: np.array(json.loads((PREDICTIONS_DIR / "original_predictions"
                                    / f"{m}{SUFFIX}").read_text())) == labels
            for m in MODELS}
    order = sorted(MODELS, key=lambda m: (-int(hits[m].sum()), m))
    pairs = ties.adjacent_discordant([ties.pack_hits(hits[m]) for m in order])
    expected_groups, group = [1], 1
    for i, (above, below) in enumerate(zip(order, order[1:], strict=False)):
        b = int(np.sum(hits[above] & ~hits[below]))
        c = int(np.sum(~hits[above] & hits[below]))
        assert pairs[i] == (b, c)
        p = exact_p(b, c)
        assert ties.mcnemar_p(b, c) == pytest.approx(p, rel=1e-9, abs=1e-300)
        group += p < 0.05
        expected_groups.append(group)
    assert ties.tie_groups(pairs).groups == expected_groups
    assert 1 < expected_groups[-1] < len(MODELS)  # some ties, some separations
