"""Intervals, ranks, fits and curves: the statistics docs/metrics.md describes, on plain arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

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


# The two-sided 95% normal quantile (1.959963984540054), from the standard library: the
# class-mean interval must not pull SciPy into the local command.
Z_TWO_SIDED = NormalDist().inv_cdf(1 - ALPHA / 2)
CLASS_MEAN_CI_METHOD = "normal"


def class_mean_record(
    hits: np.ndarray, classes: np.ndarray, *, num_classes: int, among: np.ndarray | None = None
) -> dict[str, Any]:
    """docs/metrics.md §5.1: the mean over classes of the per-class accuracies.

    `hits` (bool) and `classes` (the class each example is grouped under) cover the evaluated
    examples; `among` (bool[num_classes]) limits the mean to some classes (all by default). A
    class without an evaluated example is left out of the mean and counted. `correct` and
    `total` count examples (the per-example hits the paired tests use); `pooled_accuracy` is
    the share of examples, with its Clopper-Pearson interval. The mean's 95% interval is the
    normal approximation with per-class binomial variances, var = sum_c p_c (1 - p_c) / n_c
    / C^2, clipped to [0, 1]: Clopper-Pearson is for one proportion, not a mean of several."""
    hits = np.asarray(hits, dtype=bool)
    classes = np.asarray(classes, dtype=np.int64)
    if hits.shape != classes.shape:
        raise ValueError(f"{hits.size} hits for {classes.size} class labels")
    among = np.ones(num_classes, dtype=bool) if among is None else np.asarray(among, dtype=bool)
    kept = among[classes]
    hits, classes = hits[kept], classes[kept]
    per_class = np.bincount(classes, minlength=num_classes)
    correct_per_class = np.bincount(classes[hits], minlength=num_classes)
    present = per_class > 0
    evaluated = int(present.sum())
    record: dict[str, Any] = {
        "accuracy": None, "correct": int(hits.sum()), "total": int(hits.size),
        "ci_low": None, "ci_high": None, "ci_method": CLASS_MEAN_CI_METHOD,
        "classes_evaluated": evaluated,
        "classes_without_images": int(among.sum()) - evaluated,
        "pooled_accuracy": accuracy_record(int(hits.sum()), int(hits.size)),
    }
    if evaluated == 0:
        return record
    n = per_class[present].astype(np.float64)
    p = correct_per_class[present] / n
    mean = float(p.mean())
    half = Z_TWO_SIDED * math.sqrt(float((p * (1 - p) / n).sum())) / evaluated
    record.update(accuracy=mean, ci_low=max(0.0, mean - half), ci_high=min(1.0, mean + half))
    return record


def competition_ranks(values: np.ndarray, *, higher_is_better: bool = True) -> np.ndarray:
    """1-based "1224" ranks: 1 + the number of entries strictly better; NaN ranks last."""
    values = np.asarray(values, dtype=np.float64)
    key = np.where(np.isnan(values), -np.inf, values if higher_is_better else -values)
    order = np.sort(key)[::-1]
    # rank = 1 + count of keys strictly greater
    return (np.searchsorted(-order, -key, side="left") + 1).astype(np.int64)


# The scales an accuracy can be fitted on (docs/metrics.md §8): as it is (Recht et al. 2019,
# CIFAR-10.1), probit (Recht et al. 2019's ImageNetV2 plots; Miller et al. 2021) or logit
# (Taori et al. 2020, effective robustness).
FIT_SCALES = ("linear", "probit", "logit")
_NORMAL = NormalDist()


def scale_forward(accuracy: np.ndarray, scale: str) -> np.ndarray:
    """Accuracies (fractions) on the fit's scale; 0 and 1 map to -inf and inf off `linear`."""
    a = np.asarray(accuracy, dtype=np.float64)
    if scale == "linear":
        return a
    with np.errstate(divide="ignore"):
        if scale == "logit":
            return np.log(a) - np.log1p(-a)
        if scale == "probit":
            inv = np.vectorize(lambda v: _NORMAL.inv_cdf(v) if 0 < v < 1
                               else (-math.inf if v <= 0 else math.inf), otypes=[float])
            return np.asarray(inv(a), dtype=np.float64)
    raise ValueError(f"unknown fit scale {scale!r}; choose from {', '.join(FIT_SCALES)}")


def scale_inverse(z: np.ndarray, scale: str) -> np.ndarray:
    """The inverse of `scale_forward`: back to accuracies."""
    z = np.asarray(z, dtype=np.float64)
    if scale == "linear":
        return z
    if scale == "logit":
        return 1 / (1 + np.exp(-z))
    if scale == "probit":
        return 0.5 * np.vectorize(math.erfc, otypes=[float])(-z / math.sqrt(2))
    raise ValueError(f"unknown fit scale {scale!r}; choose from {', '.join(FIT_SCALES)}")


@dataclass(frozen=True)
class LinearFit:
    """t(y) = slope * t(x) + intercept, with t the scale's transform (identity on `linear`).
    The grid, the band and the residuals are in accuracy units, whatever the scale."""

    slope: float
    intercept: float
    grid: np.ndarray  # x values of the band
    band_low: np.ndarray  # 2.5th percentile of bootstrap fits at each grid x
    band_high: np.ndarray
    residuals: np.ndarray  # y - predict(x), per point (effective robustness)
    scale: str = "linear"

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        z = self.slope * scale_forward(np.asarray(x, dtype=np.float64), self.scale)
        return scale_inverse(z + self.intercept, self.scale)


def linear_fit(
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    grid: np.ndarray | None = None,
    scale: str = "linear",
) -> LinearFit:
    """Least-squares t(y) = a t(x) + b on the scale's transform t, with a bootstrap (over
    points) 95% band; seeded, so repeatable. Off `linear`, accuracies of exactly 0 or 1 have
    no finite transform: give none."""
    if scale not in FIT_SCALES:
        raise ValueError(f"unknown fit scale {scale!r}; choose from {', '.join(FIT_SCALES)}")
    x_acc = np.asarray(x, dtype=np.float64)
    y_acc = np.asarray(y, dtype=np.float64)
    if x_acc.shape != y_acc.shape or x_acc.ndim != 1 or x_acc.size < 3:
        raise ValueError("a linear fit needs at least 3 paired points")
    x, y = scale_forward(x_acc, scale), scale_forward(y_acc, scale)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError(f"accuracies of 0 or 1 cannot be fitted on the {scale} scale")
    if np.ptp(x) == 0:
        raise ValueError("a linear fit needs at least two distinct x values")
    slope, intercept = np.polyfit(x, y, 1)
    grid = np.linspace(x_acc.min(), x_acc.max(), 50) if grid is None else np.asarray(grid, float)
    grid_t = scale_forward(grid, scale)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    bx, by = x[idx], y[idx]
    mx, my = bx.mean(axis=1, keepdims=True), by.mean(axis=1, keepdims=True)
    sxx = ((bx - mx) ** 2).sum(axis=1)
    ok = sxx > 0  # a resample of one repeated x has no slope; drop it
    b_slope = ((bx - mx) * (by - my)).sum(axis=1)[ok] / sxx[ok]
    b_intercept = my[ok, 0] - b_slope * mx[ok, 0]
    lines = b_slope[:, None] * grid_t[None, :] + b_intercept[:, None]
    low, high = np.percentile(lines, [2.5, 97.5], axis=0)
    fit = LinearFit(float(slope), float(intercept), grid, scale_inverse(low, scale),
                    scale_inverse(high, scale), np.zeros(0), scale)
    return LinearFit(fit.slope, fit.intercept, grid, fit.band_low, fit.band_high,
                     y_acc - fit.predict(x_acc), scale)


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
