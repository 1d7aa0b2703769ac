"""The exact (Clopper-Pearson) binomial interval with nothing but `math` and NumPy.

Why not `scipy.stats.beta.ppf`: importing `scipy.stats` takes about 0.6 s and even
`scipy.special` about 0.2 s, several times the whole of a local scoring run
(`python -m workers.score`). The interval is small enough to compute directly.

The bounds (Clopper & Pearson 1934; docs/metrics.md §1) are the p at which the binomial tail
of the observed count reaches alpha / 2:

    lower p_L:  P(X >= k | n, p_L) = alpha / 2        upper p_U:  P(X <= k | n, p_U) = alpha / 2

(the beta quantiles Beta(alpha/2; k, n-k+1) and Beta(1-alpha/2; k+1, n-k)). Each tail is a sum
of binomial probabilities in log space over the window where they are not negligible, and the
equation is solved by Newton's method, whose derivative is a single binomial probability,
kept inside a bracket that shrinks at every step (so it cannot diverge). Tests compare the
result with SciPy's beta quantiles (within 5e-13).
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

# Terms further than this many standard deviations from the mean are below exp(-0.5 * 9**2)
# = 3e-18 of the largest one: nothing a float64 sum could see.
_WINDOW_SD = 9.0
_MARGIN = 40


def _log_binom_pmf(n: int, p: float, lo: int, hi: int) -> np.ndarray:
    """log P(X = j), X ~ Binomial(n, p), for j = lo..hi: log C(n, lo) once, then the ratio
    C(n, j+1) / C(n, j) = (n - j) / (j + 1) summed along the window."""
    js = np.arange(lo, hi, dtype=np.float64)
    steps = np.log((n - js) / (js + 1))
    log_choose = np.empty(hi - lo + 1)
    log_choose[0] = math.lgamma(n + 1) - math.lgamma(lo + 1) - math.lgamma(n - lo + 1)
    log_choose[1:] = log_choose[0] + np.cumsum(steps)
    j = np.arange(lo, hi + 1, dtype=np.float64)
    return log_choose + j * math.log(p) + (n - j) * math.log1p(-p)


def _upper_tail(k: int, n: int, p: float) -> float:
    """P(X >= k), X ~ Binomial(n, p), 0 < p < 1, 1 <= k <= n."""
    sd = math.sqrt(n * p * (1 - p))
    # A few more terms on each side than the normal approximation asks for, where it is poor
    # (a handful of trials, or p near 0 or 1).
    lo = max(k, int(n * p - _WINDOW_SD * sd) - _MARGIN)
    hi = min(n, int(n * p + _WINDOW_SD * sd) + _MARGIN)
    if lo > hi:  # k lies beyond the window above the mean: the tail is below float64's reach
        lo = hi = k
    terms = _log_binom_pmf(n, p, lo, hi)
    peak = float(terms.max())
    # NumPy sums pairwise: the error stays near one rounding for a few thousand terms.
    return math.exp(peak) * float(np.exp(terms - peak).sum())


def _solve(tail: float, k: int, n: int) -> float:
    """The p in (0, 1) at which P(X >= k | n, p) equals `tail` (increasing in p)."""
    low, high = 0.0, 1.0
    # Start from the normal approximation of the bound (Wald's, with the continuity
    # correction); Newton's method then needs three or four steps.
    z = NormalDist().inv_cdf(1 - tail)
    centre = (k - 0.5) / n
    p = centre - z * math.sqrt(max(centre * (1 - centre), 0.25 / n) / n)
    p = min(max(p, 1e-12), 1 - 1e-12)
    for _ in range(100):
        upper = _upper_tail(k, n, p)
        if upper > tail:
            high = p
        elif upper < tail:
            low = p
        else:
            return p
        # Newton's method on log P(X >= k) as a function of log p: near the ends (a few
        # successes, or a few failures) the tail behaves like a power of p, which this makes a
        # straight line. d/dp P(X >= k) = n * P(Y = k - 1), Y ~ Binomial(n - 1, p).
        slope = n * math.exp(float(_log_binom_pmf(n - 1, p, k - 1, k - 1)[0]))
        if slope > 0 and upper > 0:
            step = p * math.exp(-(math.log(upper) - math.log(tail)) * upper / (p * slope))
        else:
            step = math.nan
        # Newton's steps shrink quadratically: once one moves p by less than the rounding of
        # the tail (about 1e-13 of it, from the log of a large binomial coefficient) could,
        # the next would only wander in that noise.
        if abs(step - p) <= 1e-14 * p:
            return step
        p = step if low < step < high else (low + high) / 2
    return p


# A worker re-scoring thousands of submissions on one label set meets the same counts again
# and again (every model near the same accuracy on the same number of examples).
@lru_cache(maxsize=65_536)
def clopper_pearson(correct: int, total: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) interval for `correct` successes out of `total`."""
    low = 0.0 if correct == 0 else _solve(alpha / 2, correct, total)
    # The upper bound is the complement: P(X <= k | p_U) = alpha/2, i.e. P(X >= k+1) = 1-alpha/2,
    # solved on the failures instead so that the tail stays small and exact.
    high = 1.0 if correct == total else 1.0 - _solve(alpha / 2, total - correct, total)
    return low, high
