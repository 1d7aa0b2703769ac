"""Intervals, ranks, fits and curves: the statistics docs/metrics.md describes, on plain arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import binomial_interval

ALPHA = 0.05


def clopper_pearson(correct: int, total: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) binomial interval; (0, 1) edges are exact, not NaN."""
    if total <= 0:
        return (float("nan"), float("nan"))
    if not 0 <= correct <= total:
        raise ValueError(f"correct={correct} outside 0..{total}")
    return binomial_interval.clopper_pearson(correct, total, alpha)


def accuracy_record(correct: int, total: int) -> dict[str, float | int | None]:
    """The shape every accuracy takes: value, count and Clopper-Pearson 95% interval."""
    correct, total = int(correct), int(total)
    if total == 0:
        return {"accuracy": None, "correct": 0, "total": 0, "ci_low": None, "ci_high": None}
    low, high = clopper_pearson(correct, total)
    return {
        "accuracy": correct / total,
        "correct": correct,
        "total": total,
        "ci_low": low,
        "ci_high": high,
    }


def mean_record(values: np.ndarray) -> dict[str, float | int | None]:
    """A mean with its t-based 95% interval (for per-example scores that are not 0/1)."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    if n == 0:
        return {"value": None, "total": 0, "ci_low": None, "ci_high": None}
    mean = float(values.mean())
    if n == 1:
        return {"value": mean, "total": 1, "ci_low": None, "ci_high": None}
    sem = float(values.std(ddof=1)) / math.sqrt(n)
    if sem == 0:  # every value equal: the interval is that value
        return {"value": mean, "total": n, "ci_low": mean, "ci_high": mean}
    # Imported here, not at the top: scipy.special costs ~0.2 s to import, and only this mean
    # (CIFAR-10H's) needs it; the accuracies' intervals are computed without SciPy.
    from scipy.special import stdtrit

    half = float(stdtrit(n - 1, 1 - ALPHA / 2)) * sem
    return {"value": mean, "total": n, "ci_low": mean - half, "ci_high": mean + half}


def competition_ranks(values: np.ndarray, *, higher_is_better: bool = True) -> np.ndarray:
    """1-based "1224" ranks: 1 + the number of entries strictly better; NaN ranks last."""
    values = np.asarray(values, dtype=np.float64)
    key = np.where(np.isnan(values), -np.inf, values if higher_is_better else -values)
    order = np.sort(key)[::-1]
    # rank = 1 + count of keys strictly greater
    return (np.searchsorted(-order, -key, side="left") + 1).astype(np.int64)


@dataclass(frozen=True)
class LinearFit:
    slope: float
    intercept: float
    grid: np.ndarray  # x values of the band
    band_low: np.ndarray  # 2.5th percentile of bootstrap fits at each grid x
    band_high: np.ndarray
    residuals: np.ndarray  # y - (slope * x + intercept), per point

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        return self.slope * np.asarray(x, dtype=np.float64) + self.intercept


def linear_fit(
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    grid: np.ndarray | None = None,
) -> LinearFit:
    """Least-squares y = a x + b with a bootstrap (over points) 95% band; seeded, so repeatable."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 3:
        raise ValueError("a linear fit needs at least 3 paired points")
    if np.ptp(x) == 0:
        raise ValueError("a linear fit needs at least two distinct x values")
    slope, intercept = np.polyfit(x, y, 1)
    grid = np.linspace(x.min(), x.max(), 50) if grid is None else np.asarray(grid, float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    bx, by = x[idx], y[idx]
    mx, my = bx.mean(axis=1, keepdims=True), by.mean(axis=1, keepdims=True)
    sxx = ((bx - mx) ** 2).sum(axis=1)
    ok = sxx > 0  # a resample of one repeated x has no slope; drop it
    b_slope = ((bx - mx) * (by - my)).sum(axis=1)[ok] / sxx[ok]
    b_intercept = my[ok, 0] - b_slope * mx[ok, 0]
    lines = b_slope[:, None] * grid[None, :] + b_intercept[:, None]
    low, high = np.percentile(lines, [2.5, 97.5], axis=0)
    return LinearFit(float(slope), float(intercept), grid, low, high, y - (slope * x + intercept))


# --------------------------------------------- noise prevalence (docs/metrics.md §9)


def noise_prevalence_curve(
    *, acc_c: float, n_c: int, acc_b: float, n_b: int, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(N(x), A(x)) after removing a fraction x of B = P \\ C (Northcutt et al., appendix E).

    A(x) = (A_C |C| + (1 - x) A_B |B|) / (|C| + (1 - x) |B|),
    N(x) = |C| / (|P| - x |B|), with |P| = |C| + |B|.
    """
    x = np.asarray(x, dtype=np.float64)
    kept_b = (1 - x) * n_b
    accuracy = (acc_c * n_c + kept_b * acc_b) / (n_c + kept_b)
    prevalence = n_c / (n_c + n_b - x * n_b)
    return prevalence, accuracy


def noise_prevalence_crossing(
    *, first: tuple[float, float], second: tuple[float, float], n_c: int, n_b: int
) -> float | None:
    """The removal fraction x in [0, 1] where two models' curves cross, or None.

    `first`/`second` are (A_C, A_B) of each model on the same C and B. Both curves share
    the denominator, so they cross where n_c dC + (1 - x) n_b dB = 0.
    """
    d_c = first[0] - second[0]
    d_b = first[1] - second[1]
    if d_b == 0 or n_b == 0:
        return None  # parallel in the numerator: equal everywhere or never
    x = 1 + n_c * d_c / (n_b * d_b)
    return float(x) if 0.0 <= x <= 1.0 else None
