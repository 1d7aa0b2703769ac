"""Figures that compare submissions: ranks, rank shifts, the new-test-set fit, curve crossings.

Inputs are the per-submission records that `metrics.score_predictions` produced, so the
server and the local command rank exactly the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .families.corrected import NOISE_CURVES
from .stats import (
    LinearFit,
    competition_ranks,
    linear_fit,
    noise_prevalence_crossing,
    noise_prevalence_curve,
)

Records = Mapping[str, Mapping[str, Any]]  # label set slug -> record, for one submission


def _value(records: Records, slug: str, path: Sequence[str] = ("accuracy",)) -> float:
    node: Any = records.get(slug)
    for key in path:
        if not isinstance(node, Mapping):
            return float("nan")
        node = node.get(key)
    return float("nan") if node is None else float(node)


def ranks(
    submissions: Sequence[Records], slug: str, path: Sequence[str] = ("accuracy",)
) -> np.ndarray:
    """Competition ranks (1 = best) of each submission on one label set; missing ranks last."""
    return competition_ranks(np.array([_value(r, slug, path) for r in submissions]))


def swapped_pairs(first: Sequence[int], second: Sequence[int]) -> int:
    """Pairs that two rankings put in strictly opposite order (ties in either are not
    swapped), in O(n log n): walk by (first, second) and count the earlier entries ranked
    strictly worse on `second` with a Fenwick tree."""
    size = max([*second, 0])
    tree = [0] * (size + 1)
    swapped = 0
    for seen, (_, rank) in enumerate(sorted(zip(first, second, strict=True))):
        at, not_worse = rank, 0  # earlier entries with second <= rank
        while at > 0:
            not_worse += tree[at]
            at -= at & -at
        swapped += seen - not_worse
        at = rank
        while at <= size:
            tree[at] += 1
            at += at & -at
    return swapped


def new_test_set_fit(
    submissions: Sequence[Records],
    new_slug: str,
    *,
    original: str,
    n_boot: int = 1000,
    seed: int = 0,
    scale: str = "linear",
) -> tuple[LinearFit, np.ndarray] | None:
    """docs/metrics.md §8: t(new) = a * t(original) + b over the submissions having both
    (off `linear`, and not at an accuracy of 0 or 1), t the scale's transform; the indices
    used. `original` is the slug of the benchmark's reference label set (the caller's: a
    bundle may name it anything)."""
    x = np.array([_value(r, original) for r in submissions])
    y = np.array([_value(r, new_slug) for r in submissions])
    usable = ~np.isnan(x) & ~np.isnan(y)
    if scale != "linear":
        usable &= (x > 0) & (x < 1) & (y > 0) & (y < 1)
    used = np.flatnonzero(usable)
    if used.size < 3 or np.ptp(x[used]) == 0:
        return None
    return linear_fit(x[used], y[used], n_boot=n_boot, seed=seed, scale=scale), used


def noise_prevalence(
    records: Records, *, slug: str, x: np.ndarray | None = None
) -> dict[str, Any] | None:
    """docs/metrics.md §9: one submission's original and corrected curves, sampled at removal
    fractions x, from its record on the corrected label set `slug`."""
    record = records.get(slug)
    if not record or record.get("noise_prevalence") is None:
        return None
    npv = record["noise_prevalence"]
    if npv["acc_c_original"] is None or npv["acc_b"] is None:
        return None
    x = np.linspace(0.0, 1.0, 21) if x is None else np.asarray(x, dtype=np.float64)
    curves: dict[str, Any] = {"x": x.tolist()}
    for name, key in NOISE_CURVES:
        prevalence, accuracy = noise_prevalence_curve(
            acc_c=npv[key], n_c=npv["n_c"], acc_b=npv["acc_b"], n_b=npv["n_b"], x=x
        )
        curves[name] = {"prevalence": prevalence.tolist(), "accuracy": accuracy.tolist()}
    return curves


def noise_prevalence_crossings(
    first: Records, second: Records, *, slug: str
) -> dict[str, dict[str, float] | None]:
    """Where two submissions' curves cross, for original and for corrected labels."""
    a, b = first[slug]["noise_prevalence"], second[slug]["noise_prevalence"]
    n_c, n_b = a["n_c"], a["n_b"]
    out: dict[str, dict[str, float] | None] = {}
    for name, key in NOISE_CURVES:
        x = noise_prevalence_crossing(
            first=(a[key], a["acc_b"]), second=(b[key], b["acc_b"]), n_c=n_c, n_b=n_b
        )
        out[name] = None if x is None else {"x": x, "prevalence": n_c / (n_c + n_b - x * n_b)}
    return out
