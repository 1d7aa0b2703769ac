"""Statistical ties between adjacent leaderboard rows: a paired exact McNemar test.

Every submission is scored on the same examples of a label set, so two models can be
compared example by example. Of the examples where exactly one of them is right, `b` are
those only the first gets right and `c` those only the second gets right; under the null
hypothesis (equal accuracy) each such discordant example goes either way with probability
1/2, so the exact two-sided p-value is that of a binomial test of min(b, c) successes in
b + c trials at p = 1/2 (`mcnemar_p`).

`tie_groups` walks the rows in leaderboard order (best first): a row whose test against the
row just above it has p >= alpha (0.05) joins that row's group. Chaining is transitive along
the table order: if row 2 ties row 1 and row 3 ties row 2, rows 1 to 3 share a group even
when rows 1 and 3 alone would be distinguishable. Groups are numbered 1, 2, 3, ... from the
top; a row that ties nobody is a group of its own.

Per-example correctness travels as a packed bit vector (`pack_hits`, np.packbits over the
label set's evaluated examples, in their order), so the counts come from stored bytes
without re-reading any predictions (`packed_discordant`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom, binomtest

ALPHA = 0.05


def mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts (1.0 when b + c == 0)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    return float(binomtest(min(b, c), n, 0.5).pvalue)


def mcnemar_p_many(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """`mcnemar_p` for many pairs at once (min(1, 2 * P[X <= min(b, c)]), X ~ Bin(b + c, 1/2),
    which is what binomtest computes at p = 1/2, without its per-call cost of ~0.3 ms)."""
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    n = b + c
    p = np.minimum(1.0, 2.0 * binom.cdf(np.minimum(b, c), n, 0.5))
    return np.where(n == 0, 1.0, p)


def pack_hits(hits: np.ndarray) -> bytes:
    """A boolean vector (one entry per evaluated example) as packed bits (big-endian)."""
    return np.packbits(np.asarray(hits, dtype=bool)).tobytes()


def unpack_hits(packed: bytes, size: int) -> np.ndarray:
    """The inverse of `pack_hits` for a vector of `size` examples."""
    return np.unpackbits(np.frombuffer(packed, dtype=np.uint8), count=size).astype(bool)


def hits_count(packed: bytes) -> int:
    """How many examples a packed hit vector marks correct."""
    return int(np.bitwise_count(np.frombuffer(packed, dtype=np.uint8)).sum())


def discordant_counts(first: np.ndarray, second: np.ndarray) -> tuple[int, int]:
    """(b, c): examples only `first` gets right, and only `second` gets right."""
    first, second = np.asarray(first, dtype=bool), np.asarray(second, dtype=bool)
    if first.shape != second.shape:
        raise ValueError(f"hit vectors differ in shape: {first.shape} and {second.shape}")
    return int(np.count_nonzero(first & ~second)), int(np.count_nonzero(~first & second))


def packed_discordant(first: bytes, second: bytes) -> tuple[int, int] | None:
    """(b, c) from two packed hit vectors of the same label-set version; None when their
    lengths differ (then they do not cover the same examples and cannot be paired). The
    padding bits of the last byte are zero in both, so they count in neither."""
    if len(first) != len(second):
        return None
    x = np.frombuffer(first, dtype=np.uint8)
    y = np.frombuffer(second, dtype=np.uint8)
    return (int(np.bitwise_count(x & ~y).sum()), int(np.bitwise_count(~x & y).sum()))


# Rows stacked per step of `adjacent_discordant`: bounds its memory (ImageNet: 6,250 bytes a row).
_STACK_ROWS = 512


def adjacent_discordant(packed: Sequence[bytes | None]) -> list[tuple[int, int] | None]:
    """(b, c) of each adjacent pair (row i - 1 above, row i) of packed hit vectors in table
    order; None where either is missing or has another length than most rows (then the two
    do not cover the same examples)."""
    lengths = Counter(len(h) for h in packed if h is not None)
    out: list[tuple[int, int] | None] = [None] * max(len(packed) - 1, 0)
    if not lengths:
        return out
    width = lengths.most_common(1)[0][0]
    words = -(-width // 8)  # each row zero-padded to whole 64-bit words
    zero = bytes(8 * words)
    valid = [h is not None and len(h) == width for h in packed]
    for start in range(0, len(packed) - 1, _STACK_ROWS):
        stop = min(len(packed), start + _STACK_ROWS + 1)  # rows start..stop-1 overlap by one
        raw = b"".join(h.ljust(8 * words, b"\0") if ok and h is not None else zero
                       for h, ok in zip(packed[start:stop], valid[start:stop], strict=True))
        block = np.frombuffer(raw, dtype=np.uint64).reshape(stop - start, words)
        above, below = block[:-1], block[1:]
        b = np.bitwise_count(above & ~below).sum(axis=1, dtype=np.int64)
        c = np.bitwise_count(~above & below).sum(axis=1, dtype=np.int64)
        for j, (bj, cj) in enumerate(zip(b.tolist(), c.tolist(), strict=True)):
            if valid[start + j] and valid[start + j + 1]:
                out[start + j] = (bj, cj)
    return out


@dataclass(frozen=True)
class Ties:
    """Per row, in the order given: its tie group (1 = top), whether it ties the row above,
    and the McNemar p-value against the row above (None for the first row, or untestable)."""

    groups: list[int]
    tied_with_previous: list[bool]
    p_values: list[float | None]


def tie_groups(pairs: Sequence[tuple[int, int] | None], alpha: float = ALPHA) -> Ties:
    """Tie groups of len(pairs) + 1 rows in table order from each adjacent pair's (b, c).

    pairs[i] compares row i (above) with row i + 1; None marks a pair that cannot be tested
    (a row without stored hits, or without a score on the label set): those rows are not
    tied. A row with p >= alpha against the row above joins its group (transitively)."""
    known = [(i, pair) for i, pair in enumerate(pairs) if pair is not None]
    p_known = mcnemar_p_many(np.array([pair[0] for _, pair in known], dtype=np.int64),
                             np.array([pair[1] for _, pair in known], dtype=np.int64))
    p_values: list[float | None] = [None] * (len(pairs) + 1)
    for (i, _), p in zip(known, p_known.tolist(), strict=True):
        p_values[i + 1] = float(p)
    groups = [1]
    tied = [False]
    for p in p_values[1:]:
        joins = p is not None and p >= alpha
        tied.append(joins)
        groups.append(groups[-1] if joins else groups[-1] + 1)
    return Ties(groups, tied, p_values)
