"""rank_ub of every row of a board without testing every pair (docs/metrics.md §10.4).

`significance.board_significance` tests all n² pairs: one Gram matrix over every example.
Most pairs need no test at all. For two rows with s_hi > s_lo correct out of N examples, the
difference b - c = s_hi - s_lo is fixed by the counts, and only the discordance b + c depends
on the hits; it lies between

    s_hi - s_lo   (every example the lower row gets right, the higher one does too) and
    s_hi + s_lo - 2 * max(0, s_hi + s_lo - N)   (they agree on as few as the counts allow),

and for a fixed difference the McNemar p-value grows with the discordance. So a pair whose
p-value at the largest discordance is below alpha is significant whatever its hits, and one
whose p-value at the smallest is not is never. With the rows sorted by count, the pairs left
(for each row, the rows a little better than it) form a band next to the diagonal: only the
band's blocks of the Gram matrix are computed, on `threads` threads (NumPy's products and
unpacking release the GIL).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from workers.scoring.significance import ALPHA, BoardSignificance, mcnemar_p

# Rows per block of the band (a block's columns span its rows' bands) and examples per
# unpacked slice: 256 x 8,192 float32 = 8 MB per side.
_BLOCK_ROWS = 256
_SLICE_BYTES = 1_024


def p_at_extremes(s_hi: np.ndarray, s_lo: np.ndarray, examples: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(p at the smallest discordance the counts allow, p at the largest) for pairs where
    the first row gets s_hi >= s_lo examples right out of `examples`."""
    s_hi = np.asarray(s_hi, dtype=np.int64)
    s_lo = np.asarray(s_lo, dtype=np.int64)
    both_least = np.maximum(0, s_hi + s_lo - examples)
    return (mcnemar_p(s_hi - s_lo, np.zeros_like(s_lo)),
            mcnemar_p(s_hi - both_least, s_lo - both_least))


def _least_sure(s: np.ndarray, examples: int, alpha: float) -> np.ndarray:
    """For each count s_i, the smallest count t_i > s_i that is significantly better than it
    whatever the hits (examples + 1 where none is). p at the largest discordance does not
    grow with the higher count (docs/metrics.md §10.4), so a bisection finds it."""
    lo = s + 1
    hi = np.full_like(s, examples + 1)
    while (lo < hi).any():
        mid = (lo + hi) // 2
        probe = np.minimum(mid, examples)
        sure = (p_at_extremes(probe, s, examples)[1] < alpha) & (mid <= examples)
        hi = np.where((lo < hi) & sure, mid, hi)
        lo = np.where((lo < hi) & ~sure, mid + 1, lo)
    return lo


def _least_possible(examples: int, alpha: float) -> int:
    """The smallest difference s_hi - s_lo that can be significant (p at b + c = b - c)."""
    d = 1
    while d <= examples and p_at_extremes(np.array([d]), np.array([0]), examples)[0][0] >= alpha:
        d += 1
    return d


def _band_block(bits: np.ndarray, s: np.ndarray, acc: np.ndarray, lo: np.ndarray,
                hi: np.ndarray, start: int, alpha: float) -> np.ndarray:
    """Of rows start..start+_BLOCK_ROWS (sorted by count), how many rows of their bands
    [lo_i, hi_i) are significantly better: the band's Gram block, then the test."""
    stop = min(start + _BLOCK_ROWS, len(s))
    first, last = int(lo[start:stop].min()), int(hi[start:stop].max())
    if last <= first:
        return np.zeros(stop - start, dtype=np.int64)
    gram = np.zeros((stop - start, last - first), dtype=np.float64)
    for at in range(0, bits.shape[1], _SLICE_BYTES):
        rows = np.unpackbits(bits[start:stop, at:at + _SLICE_BYTES], axis=1).astype(np.float32)
        cols = np.unpackbits(bits[first:last, at:at + _SLICE_BYTES], axis=1).astype(np.float32)
        # products of 0/1 summed over at most 8,192 columns are exact in float32
        gram += rows @ cols.T
    both = np.rint(gram).astype(np.int64)
    j = np.arange(first, last)
    i = np.arange(start, stop)
    band = ((j[None, :] >= lo[i, None]) & (j[None, :] < hi[i, None])
            & (acc[None, first:last] > acc[i, None]) & (s[None, first:last] > s[i, None]))
    ii, jj = np.nonzero(band)
    b = s[first + jj] - both[ii, jj]
    c = s[start + ii] - both[ii, jj]
    better = np.zeros(band.shape, dtype=bool)
    better[ii, jj] = mcnemar_p(b, c) < alpha
    return better.sum(axis=1).astype(np.int64)


def better_counts(bits: np.ndarray, s: np.ndarray, acc: np.ndarray, *, alpha: float = ALPHA,
                  threads: int = 1) -> np.ndarray:
    """For each row of `bits` (packed hits, one row each, equal widths) with s correct and
    accuracy acc: how many rows are significantly better (higher accuracy, more correct,
    p < alpha), as `significance.board_significance` counts them."""
    n = len(s)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    examples = bits.shape[1] * 8  # padding bits are 0: a bound at least as loose as the truth
    order = np.argsort(s, kind="stable")
    s_sorted = np.asarray(s, dtype=np.int64)[order]
    acc_sorted = np.asarray(acc, dtype=np.float64)[order]
    bits_sorted = bits[order]
    sure_from = _least_sure(s_sorted, examples, alpha)
    lo = np.searchsorted(s_sorted, s_sorted + _least_possible(examples, alpha), side="left")
    hi = np.searchsorted(s_sorted, sure_from, side="left")
    counts = np.zeros(n, dtype=np.int64)
    for start in range(0, n, _BLOCK_ROWS):  # sure: counts alone decide (and the accuracies)
        stop = min(start + _BLOCK_ROWS, n)
        counts[start:stop] = ((s_sorted[None, :] >= sure_from[start:stop, None])
                              & (acc_sorted[None, :] > acc_sorted[start:stop, None])).sum(axis=1)
    starts = range(0, n, _BLOCK_ROWS)
    # One BLAS thread per product: the blocks are the parallelism (BLAS's own threads on
    # these small products only contend with them).
    with threadpool_limits(limits=1, user_api="blas"), \
            ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for start, band in zip(starts, pool.map(
                lambda at: _band_block(bits_sorted, s_sorted, acc_sorted, lo, hi, at, alpha),
                starts), strict=True):
            counts[start:start + len(band)] += band
    result = np.empty(n, dtype=np.int64)
    result[order] = counts
    return result


def popcount_and(bits: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Per row of `bits`, the examples both it and `vector` (one packed row) get right."""
    return np.bitwise_count(np.bitwise_and(bits, vector[None, :])).sum(axis=1, dtype=np.int64)




def p_above_of(bits: np.ndarray, rows: Sequence[int | None]) -> list[float | None]:
    """p_above of each board row (`rows`: its row of `bits`, None when it cannot be paired):
    against the board row just above when both can be paired."""
    result: list[float | None] = [None] * len(rows)
    pairs = [k for k in range(1, len(rows)) if rows[k] is not None and rows[k - 1] is not None]
    if pairs:
        at = np.array([-1 if r is None else r for r in rows], dtype=np.int64)
        above = bits[at[np.array(pairs) - 1]]
        below = bits[at[pairs]]
        s_above = np.bitwise_count(above).sum(axis=1, dtype=np.int64)
        s_below = np.bitwise_count(below).sum(axis=1, dtype=np.int64)
        both = np.bitwise_count(np.bitwise_and(above, below)).sum(axis=1, dtype=np.int64)
        for k, p in zip(pairs, mcnemar_p(s_above - both, s_below - both).tolist(), strict=True):
            result[k] = float(p)
    return result


def board_significance_pruned(bits: np.ndarray, rows: Sequence[int | None],
                              accuracy: Sequence[float], *, alpha: float = ALPHA,
                              threads: int = 1) -> BoardSignificance:
    """`significance.board_significance` from a matrix of packed hits: board row k is row
    rows[k] of `bits` (None: it cannot be paired), accuracy[k] what the board sorts by."""
    usable = [k for k, r in enumerate(rows) if r is not None]
    matrix = bits[np.array([rows[k] for k in usable], dtype=np.int64)]
    s = np.bitwise_count(matrix).sum(axis=1, dtype=np.int64)
    acc = np.asarray([accuracy[k] for k in usable], dtype=np.float64)
    better = better_counts(matrix, s, acc, alpha=alpha, threads=threads)
    rank_ub: list[int | None] = [None] * len(rows)
    for k, n in zip(usable, better.tolist(), strict=True):
        rank_ub[k] = 1 + int(n)
    return BoardSignificance(rank_ub, p_above_of(bits, rows))
