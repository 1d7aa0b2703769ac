"""Tests for workers.scoring.significance: McNemar p-values between every two rows from one
matrix product, and rank_ub. Expected values come from a direct pair-by-pair computation
with boolean arrays and math.comb (never from SciPy), on hand-made cases and the 30 real
CIFAR-10 models."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from tests.workers.scoring.realdata import MODELS, PREDICTIONS_DIR, SUFFIX
from workers.scoring import significance


def exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar: 2 * P[X <= min(b, c)], X ~ Bin(b + c, 1/2), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, k) for k in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def direct_rank_ub(hits: list[np.ndarray], alpha: float = 0.05) -> list[int]:
    """1 + the rows with more correct examples whose paired test against this row has p <
    alpha, pair by pair."""
    out = []
    for i, mine in enumerate(hits):
        better = 0
        for j, other in enumerate(hits):
            if j == i or other.sum() <= mine.sum():
                continue
            b = int(np.count_nonzero(mine & ~other))
            c = int(np.count_nonzero(~mine & other))
            better += exact_p(b, c) < alpha
        out.append(1 + better)
    return out


@pytest.mark.parametrize(("b", "c", "expected"), [
    (0, 0, 1.0), (0, 5, 2 / 32), (5, 0, 2 / 32), (0, 6, 2 / 64), (1, 9, 2 * (1 + 10) / 1024),
    (3, 3, 1.0), (2, 3, 1.0), (8, 0, 2 / 256),
])
def test_it_computes_the_exact_mcnemar_p_value_by_hand(b: int, c: int, expected: float) -> None:
    got = float(significance.mcnemar_p(np.array([b]), np.array([c]))[0])
    assert got == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize(("b", "c"), [(10, 20), (120, 170), (57, 43), (300, 300), (0, 40),
                                      (1500, 1610), (31, 1)])
def test_it_matches_math_comb_on_larger_counts(b: int, c: int) -> None:
    got = float(significance.mcnemar_p(np.array([b]), np.array([c]))[0])
    assert got == pytest.approx(exact_p(b, c), rel=1e-9, abs=1e-300)


def test_it_counts_both_correct_like_boolean_arrays() -> None:
    rng = np.random.default_rng(3)
    hits = [rng.random(20_003) < q for q in (0.2, 0.5, 0.5, 0.9, 0.99)]  # 20,003: a ragged byte
    both = significance.both_correct([significance.pack_hits(h) for h in hits])
    for i, x in enumerate(hits):
        for j, y in enumerate(hits):
            assert both[i, j] == int(np.count_nonzero(x & y))


def test_it_gives_rank_ub_of_the_real_cifar10_models_like_pair_by_pair_tests() -> None:
    labels = np.load(PREDICTIONS_DIR.parent / "original_labels.npy")
    hits = [np.array(json.loads(
        (PREDICTIONS_DIR / "original_predictions" / f"{model}{SUFFIX}").read_text())) == labels
        for model in MODELS]
    correct, p = significance.pairwise_p([significance.pack_hits(h) for h in hits])
    assert correct.tolist() == [int(h.sum()) for h in hits]
    for i in range(0, len(hits), 7):
        for j in range(len(hits)):
            b = int(np.count_nonzero(hits[i] & ~hits[j]))
            c = int(np.count_nonzero(~hits[i] & hits[j]))
            assert p[i, j] == pytest.approx(exact_p(b, c), rel=1e-9, abs=1e-300)
    # the board's rank_ub (rows in board order, best first), back in the models' order
    order = np.argsort(-correct, kind="stable")
    board = significance.board_significance(
        [significance.pack_hits(hits[i]) for i in order],
        [int(correct[i]) / labels.size for i in order])
    ranks = np.empty(len(hits), dtype=np.int64)
    ranks[order] = board.rank_ub
    assert ranks.tolist() == direct_rank_ub(hits)
    # the chained tie groups put the top 14 models in one group; rank_ub does not chain: the
    # best model is significantly better than the fourteenth
    assert ranks[order[0]] == 1
    assert ranks[order[13]] > 1


def test_it_gives_every_row_rank_1_when_nothing_differs() -> None:
    same = significance.pack_hits(np.array([True, False, True]))
    correct, p = significance.pairwise_p([same, same, same])
    assert p.tolist() == [[1.0] * 3] * 3
    assert significance.board_significance([same] * 3, [2 / 3] * 3).rank_ub == [1, 1, 1]


def test_it_refuses_vectors_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        significance.both_correct([b"\x01", b"\x01\x02"])


@pytest.mark.parametrize("size", [1, 7, 8, 9, 68, 2000, 50_000])
def test_it_packs_and_unpacks_hit_vectors_of_any_length(size: int) -> None:
    hits = np.random.default_rng(size).random(size) < 0.7
    packed = significance.pack_hits(hits)
    assert len(packed) == -(-size // 8)
    assert significance.unpack_hits(packed, size).tolist() == hits.tolist()
    assert significance.hits_count(packed) == int(hits.sum())


def test_it_gives_a_board_rank_ub_and_p_above_leaving_unpairable_rows_out() -> None:
    rng = np.random.default_rng(3)
    hits = [rng.random(400) < q for q in (0.9, 0.88, 0.8, 0.79, 0.6, 0.5)]
    order = sorted(range(len(hits)), key=lambda i: -int(hits[i].sum()))
    hits = [hits[i] for i in order]
    packed: list[bytes | None] = [significance.pack_hits(h) for h in hits]
    packed[3] = None  # no stored hits
    packed[4] = significance.pack_hits(hits[4][:-9])  # another length: not the same examples
    accuracy = [float(h.mean()) for h in hits]

    got = significance.board_significance(packed, accuracy)

    kept = [0, 1, 2, 5]
    want_ub = direct_rank_ub([hits[i] for i in kept])
    assert got.rank_ub == [want_ub[0], want_ub[1], want_ub[2], None, None, want_ub[3]]
    pair = [(h, g) for h, g in zip(hits[:2], hits[1:3], strict=True)]
    want_p = [exact_p(int(np.count_nonzero(a & ~b)), int(np.count_nonzero(~a & b)))
              for a, b in pair]
    assert got.p_above[0] is None and got.p_above[3:] == [None, None, None]
    assert got.p_above[1:3] == pytest.approx(want_p, rel=1e-9)
    assert got.rank_ub[2] is not None and got.rank_ub[2] > 1  # some separation in this case
