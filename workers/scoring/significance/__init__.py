"""Which rows of a leaderboard are significantly better than which: every pair at once.

Every submission is scored on the same examples of a label-set version, so two models can be
compared example by example (a paired test). For rows i and j, of the examples where exactly
one of them is right, `b_ij` are those only i gets right and `c_ij = b_ji` those only j gets
right. Under the null hypothesis of equal accuracy each discordant example goes either way
with probability 1/2, so the exact two-sided McNemar p-value is

    p_ij = min(1, 2 * P[X <= min(b_ij, c_ij)]),   X ~ Binomial(b_ij + c_ij, 1/2).

With H the 0/1 matrix of per-example hits (one row per submission) and s_i = sum_k H_ik the
number it gets right, the number both get right is (H Hᵀ)_ij, so

    b_ij = s_i - (H Hᵀ)_ij      and      c_ij = s_j - (H Hᵀ)_ij:

one matrix product gives every pair (docs/metrics.md §10).

`rank_ub` (an upper bound on the rank, as large public leaderboards such as LMSYS's arena
show beside the rank) is 1 + the number of rows that are significantly better: higher
accuracy and p < alpha (0.05), pairwise and NOT corrected for multiple comparisons, so with
many rows some of the "significantly better" calls are expected to be chance.

Hits travel as packed bit vectors (`pack_hits`: np.packbits over the label set's evaluated
examples, in their order), so the counts come from stored bytes without re-reading any
predictions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

ALPHA = 0.05

# Examples per block of the Gram matrix product: a block of 1,000 rows is 1,000 x 8,192
# float32 = 32 MB, whatever the label set's size.
_BLOCK_EXAMPLES = 8_192


def pack_hits(hits: np.ndarray) -> bytes:
    """A boolean vector (one entry per evaluated example) as packed bits (big-endian)."""
    return np.packbits(np.asarray(hits, dtype=bool)).tobytes()


def unpack_hits(packed: bytes, size: int) -> np.ndarray:
    """The inverse of `pack_hits` for a vector of `size` examples."""
    return np.unpackbits(np.frombuffer(packed, dtype=np.uint8), count=size).astype(bool)


def hits_count(packed: bytes) -> int:
    """How many examples a packed hit vector marks correct."""
    return int(np.bitwise_count(np.frombuffer(packed, dtype=np.uint8)).sum())


def mcnemar_p(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact two-sided McNemar p-values from discordant counts (1.0 where b + c == 0)."""
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if (b < 0).any() or (c < 0).any():
        raise ValueError("discordant counts must be >= 0")
    # Imported here, not at the top: scipy.special costs about 0.3 s to import, and every web
    # and worker process imports this module (through the significance of the boards) while
    # few of them ever compute a p-value.
    from scipy.special import bdtr

    n = b + c
    # bdtr(k, n, p) = P[X <= k], X ~ Binomial(n, p); at p = 1/2 the two tails are mirror
    # images, so the two-sided p-value is twice the smaller one.
    p = np.minimum(1.0, 2.0 * bdtr(np.minimum(b, c), np.maximum(n, 1), 0.5))
    return np.where(n == 0, 1.0, p)


def both_correct(packed: Sequence[bytes]) -> np.ndarray:
    """(H Hᵀ): for every pair of rows, the examples both get right (int64, symmetric; the
    diagonal is each row's own count). Every vector must have the same length."""
    if not packed:
        return np.zeros((0, 0), dtype=np.int64)
    width = len(packed[0])
    if any(len(row) != width for row in packed):
        raise ValueError("hit vectors of different lengths cannot be paired")
    bits = np.frombuffer(b"".join(packed), dtype=np.uint8).reshape(len(packed), width)
    gram = np.zeros((len(packed), len(packed)), dtype=np.float64)
    step = _BLOCK_EXAMPLES // 8
    for start in range(0, width, step):
        block = np.unpackbits(bits[:, start:start + step], axis=1).astype(np.float32)
        # float32 products of 0/1 summed over at most 8,192 columns are exact integers
        gram += block @ block.T
    return np.rint(gram).astype(np.int64)


def pairwise_p(packed: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(s, P): each row's count of correct examples and the matrix of McNemar p-values
    between every two rows (1.0 on the diagonal)."""
    both = both_correct(packed)
    s = np.diag(both).copy()
    b = s[:, None] - both
    return s, mcnemar_p(b, b.T)


@dataclass(frozen=True)
class BoardSignificance:
    """Per row of a board, in the order given (best first): `rank_ub`, and `p_above`, the
    McNemar p-value against the row just above (None for the first row and where either row
    cannot be paired)."""

    rank_ub: list[int | None]
    p_above: list[float | None]


def board_significance(packed: Sequence[bytes | None], accuracy: Sequence[float],
                       alpha: float = ALPHA) -> BoardSignificance:
    """rank_ub and the p-value against the row above for the rows of one board, in board
    order. `packed` is each row's hits on the sort label set (None: none stored); rows whose
    vector has another length than most cannot be paired with them and get None too.

    A row counts as significantly better than another when it is ranked higher (`accuracy`,
    what the board sorts by), gets more examples right (the direction of the paired test: the
    two agree except on multi-label class means) and p < alpha."""
    if len(packed) != len(accuracy):
        raise ValueError("one accuracy per hit vector")
    lengths = Counter(len(h) for h in packed if h is not None)
    rank_ub: list[int | None] = [None] * len(packed)
    p_above: list[float | None] = [None] * len(packed)
    if not lengths:
        return BoardSignificance(rank_ub, p_above)
    width = lengths.most_common(1)[0][0]
    usable = [i for i, h in enumerate(packed) if h is not None and len(h) == width]
    s, p = pairwise_p([cast(bytes, packed[i]) for i in usable])
    acc = np.asarray([accuracy[i] for i in usable], dtype=np.float64)
    better = ((acc[None, :] > acc[:, None]) & (s[None, :] > s[:, None]) & (p < alpha))
    for k, (i, n) in enumerate(zip(usable, better.sum(axis=1).tolist(), strict=True)):
        rank_ub[i] = 1 + int(n)
        if k and usable[k - 1] == i - 1:
            p_above[i] = float(p[k - 1, k])
    return BoardSignificance(rank_ub, p_above)
