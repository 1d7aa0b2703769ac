"""Tests for workers.scoring.stats: intervals, ranks, the linear fit, noise-prevalence curves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from workers.scoring.stats import (
    accuracy_record,
    class_mean_record,
    clopper_pearson,
    competition_ranks,
    linear_fit,
    mean_record,
    noise_prevalence_crossing,
    noise_prevalence_curve,
)

# scipy's binomtest finds the exact limits with brentq (xtol 2e-12)
BRENTQ_TOL = 1e-11

GRID = sorted({(k, n) for n in (1, 2, 3, 5, 10, 37, 100, 1000, 2021, 10_000, 50_000)
               for k in (0, 1, n // 3, n // 2, n - 1, n)})


@pytest.mark.parametrize(("k", "n"), GRID)
def test_it_gives_the_exact_clopper_pearson_interval_of_scipy(k: int, n: int) -> None:
    expected = scipy_stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    low, high = clopper_pearson(k, n)
    assert low == pytest.approx(expected.low, abs=BRENTQ_TOL)
    assert high == pytest.approx(expected.high, abs=BRENTQ_TOL)


@pytest.mark.parametrize("seed", range(4))
def test_it_matches_scipys_beta_quantiles_within_5e13(seed: int) -> None:
    """The interval is computed without SciPy (workers/scoring/binomial_interval.py); SciPy's
    beta quantiles are the independent reference, on counts like the benchmarks' and random
    ones."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60_000, size=40).tolist() + rng.integers(1, 80, size=40).tolist()
    for n in sizes:
        k = int(rng.integers(0, n + 1))
        low, high = clopper_pearson(k, n)
        expected_low = 0.0 if k == 0 else scipy_stats.beta.ppf(0.025, k, n - k + 1)
        expected_high = 1.0 if k == n else scipy_stats.beta.ppf(0.975, k + 1, n - k)
        assert abs(low - expected_low) < 5e-13, (k, n)
        assert abs(high - expected_high) < 5e-13, (k, n)


def test_it_gives_exact_edges_at_no_and_all_correct() -> None:
    assert clopper_pearson(0, 20)[0] == 0.0
    assert clopper_pearson(20, 20)[1] == 1.0
    # the other edge has the closed form 1 - (alpha/2)^(1/n) and its mirror
    assert clopper_pearson(0, 20)[1] == pytest.approx(1 - 0.025 ** (1 / 20), rel=1e-12)
    assert clopper_pearson(20, 20)[0] == pytest.approx(0.025 ** (1 / 20), rel=1e-12)


def test_it_gives_nan_for_no_examples() -> None:
    low, high = clopper_pearson(0, 0)
    assert math.isnan(low) and math.isnan(high)


@pytest.mark.parametrize(("k", "n"), [(-1, 5), (6, 5)])
def test_it_refuses_a_count_outside_the_total(k: int, n: int) -> None:
    with pytest.raises(ValueError, match="outside"):
        clopper_pearson(k, n)


def test_it_builds_an_accuracy_record_with_count_and_interval() -> None:
    expected = scipy_stats.binomtest(7, 9).proportion_ci(0.95, method="exact")
    record = accuracy_record(np.int64(7), np.int64(9))
    assert set(record) == {"accuracy", "correct", "total", "ci_low", "ci_high"}
    assert record["accuracy"] == 7 / 9
    assert (record["correct"], record["total"]) == (7, 9)
    assert type(record["correct"]) is int and type(record["total"]) is int
    assert record["ci_low"] == pytest.approx(expected.low, abs=BRENTQ_TOL)
    assert record["ci_high"] == pytest.approx(expected.high, abs=BRENTQ_TOL)


def test_it_builds_an_empty_accuracy_record_for_no_examples() -> None:
    assert accuracy_record(0, 0) == {"accuracy": None, "correct": 0, "total": 0,
                                     "ci_low": None, "ci_high": None}


def test_it_gives_a_mean_with_the_t_interval_of_scipy() -> None:
    values = np.array([0.1, 0.4, 0.35, 0.9, 0.0, 0.65, 0.2])
    n = values.size
    mean = sum(values.tolist()) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values.tolist()) / (n - 1))
    t = scipy_stats.t.ppf(0.975, n - 1)
    record = mean_record(values)
    assert record["value"] == pytest.approx(mean, rel=1e-14)
    assert record["total"] == 7
    assert record["ci_low"] == pytest.approx(mean - t * sd / math.sqrt(n), rel=1e-12)
    assert record["ci_high"] == pytest.approx(mean + t * sd / math.sqrt(n), rel=1e-12)
    low, high = scipy_stats.t.interval(0.95, n - 1, loc=values.mean(),
                                       scale=scipy_stats.sem(values))
    assert (record["ci_low"], record["ci_high"]) == pytest.approx((low, high), rel=1e-14)


def test_it_gives_a_mean_without_interval_for_one_value_and_none_for_no_values() -> None:
    assert mean_record(np.array([0.25])) == {"value": 0.25, "total": 1, "ci_low": None,
                                             "ci_high": None}
    assert mean_record(np.array([])) == {"value": None, "total": 0, "ci_low": None,
                                         "ci_high": None}


# all-equal values have zero spread: the interval collapses to the value (no scipy NaNs)
def test_it_gives_a_zero_width_interval_for_equal_values() -> None:
    assert mean_record(np.full(5, 0.5)) == {"value": 0.5, "total": 5, "ci_low": 0.5,
                                            "ci_high": 0.5}


# ---------------------------------------------------------------- class means (§5.1)


def _class_mean_by_loop(hits: list[bool], classes: list[int],
                        among: set[int]) -> tuple[float, float, float, int]:
    """(mean, low, high, classes evaluated) with dictionaries, and SciPy's normal quantile."""
    counts: dict[int, list[int]] = {}
    for hit, cls in zip(hits, classes, strict=True):
        if cls in among:
            counts.setdefault(cls, [0, 0])
            counts[cls][0] += int(hit)
            counts[cls][1] += 1
    accuracies = [(c / n, n) for c, n in counts.values()]
    mean = math.fsum(p for p, _ in accuracies) / len(accuracies)
    sd = math.sqrt(math.fsum(p * (1 - p) / n for p, n in accuracies)) / len(accuracies)
    half = float(scipy_stats.norm.ppf(0.975)) * sd
    return mean, max(0.0, mean - half), min(1.0, mean + half), len(accuracies)


@pytest.mark.parametrize("seed", range(3))
def test_it_gives_the_mean_of_class_accuracies_with_a_normal_interval(seed: int) -> None:
    rng = np.random.default_rng(seed)
    classes = rng.integers(0, 60, size=900)  # some of the 60 classes may have no example
    hits = rng.random(900) < rng.uniform(0.3, 0.95, size=60)[classes]
    among = rng.random(60) < 0.5
    for mask in (None, among):
        wanted = set(range(60)) if mask is None else set(np.flatnonzero(mask).tolist())
        record = class_mean_record(hits, classes, num_classes=60, among=mask)
        mean, low, high, evaluated = _class_mean_by_loop(hits.tolist(), classes.tolist(),
                                                         wanted)
        assert record["accuracy"] == pytest.approx(mean, rel=1e-13)
        assert (record["ci_low"], record["ci_high"]) == pytest.approx((low, high), rel=1e-13)
        assert record["classes_evaluated"] == evaluated
        assert record["classes_without_images"] == len(wanted) - evaluated
        inside = [h for h, c in zip(hits.tolist(), classes.tolist(), strict=True)
                  if c in wanted]
        assert (record["correct"], record["total"]) == (sum(inside), len(inside))
        assert record["pooled_accuracy"] == accuracy_record(sum(inside), len(inside))
        assert record["ci_method"] == "normal"


def test_it_leaves_classes_without_examples_out_of_the_mean_and_counts_them() -> None:
    # classes 0 (2 of 2), 3 (0 of 1) and 4 (1 of 4) have examples; 1, 2 and 5 have none
    record = class_mean_record(np.array([1, 1, 0, 1, 0, 0, 0], dtype=bool),
                               np.array([0, 0, 3, 4, 4, 4, 4]), num_classes=6)
    assert record["accuracy"] == pytest.approx((1 + 0 + 0.25) / 3, abs=1e-16)
    assert (record["classes_evaluated"], record["classes_without_images"]) == (3, 3)
    assert (record["correct"], record["total"]) == (3, 7)  # pooled: 3/7, not 5/12


def test_it_clips_the_class_mean_interval_and_is_a_point_without_spread() -> None:
    # every class right: no binomial variance, the interval is the value
    perfect = class_mean_record(np.ones(4, dtype=bool), np.array([0, 1, 1, 2]), num_classes=3)
    assert (perfect["accuracy"], perfect["ci_low"], perfect["ci_high"]) == (1.0, 1.0, 1.0)
    # class 0: 1 of 2, class 1: 3 of 3; mean 0.75, sd = sqrt(0.125) / 2, the top clipped at 1
    record = class_mean_record(np.array([1, 0, 1, 1, 1], dtype=bool), np.array([0, 0, 1, 1, 1]),
                               num_classes=2)
    half = 1.959963984540054 * math.sqrt(0.125) / 2
    assert (record["ci_low"], record["ci_high"]) == (pytest.approx(0.75 - half), 1.0)


def test_it_gives_no_class_mean_without_examples_and_refuses_mismatched_arrays() -> None:
    # only classes 2 and 3 count, and no example is of either
    empty = class_mean_record(np.ones(3, dtype=bool), np.array([0, 1, 1]), num_classes=4,
                              among=np.array([0, 0, 1, 1], dtype=bool))
    assert {k: empty[k] for k in ("accuracy", "ci_low", "ci_high", "correct", "total",
                                  "classes_evaluated", "classes_without_images")} == {
        "accuracy": None, "ci_low": None, "ci_high": None, "correct": 0, "total": 0,
        "classes_evaluated": 0, "classes_without_images": 2}
    assert empty["pooled_accuracy"] == accuracy_record(0, 0)
    with pytest.raises(ValueError, match="3 hits for 2 class labels"):
        class_mean_record(np.zeros(3, dtype=bool), np.array([0, 1]), num_classes=2)


@pytest.mark.parametrize(("values", "expected"), [
    ([0.9, 0.8, 0.8, 0.7], [1, 2, 2, 4]),
    ([0.7, 0.8, 0.9, 0.8], [4, 2, 1, 2]),
    ([float("nan"), 0.5, 0.5, 0.1], [4, 1, 1, 3]),
    ([float("nan"), 0.3, float("nan")], [2, 1, 2]),
    ([0.5, 0.5, 0.5], [1, 1, 1]),
    ([0.2], [1]),
])
def test_it_gives_1224_competition_ranks_with_nan_last(values: list[float],
                                                        expected: list[int]) -> None:
    ranks = competition_ranks(np.array(values))
    assert ranks.tolist() == expected
    assert ranks.dtype == np.int64


def test_it_ranks_lower_first_when_lower_is_better() -> None:
    values = np.array([0.9, 0.8, float("nan"), 0.8, 0.7])
    assert competition_ranks(values, higher_is_better=False).tolist() == [4, 2, 5, 2, 1]


def test_it_fits_points_exactly_on_a_line() -> None:
    x = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    y = 2.0 * x - 0.75
    fit = linear_fit(x, y, n_boot=200)
    assert fit.slope == pytest.approx(2.0, rel=1e-12)
    assert fit.intercept == pytest.approx(-0.75, rel=1e-12)
    assert fit.residuals == pytest.approx(np.zeros(6), abs=1e-12)
    line = 2.0 * fit.grid - 0.75
    assert fit.grid.tolist() == np.linspace(0.5, 0.95, 50).tolist()
    assert fit.band_low == pytest.approx(line, abs=1e-12)
    assert fit.band_high == pytest.approx(line, abs=1e-12)
    assert fit.predict(0.65) == pytest.approx(0.55, abs=1e-12)


@pytest.fixture
def noisy() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(12345)
    x = rng.uniform(0.80, 0.97, size=30)
    return x, 1.7 * x - 0.8 + rng.normal(0.0, 0.01, size=30)


def test_it_fits_noisy_points_like_polyfit(noisy: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = noisy
    slope, intercept = np.polyfit(x, y, 1)
    fit = linear_fit(x, y)
    assert fit.slope == slope and fit.intercept == intercept
    assert fit.residuals.tolist() == (y - (slope * x + intercept)).tolist()


def test_it_repeats_the_bootstrap_band_for_the_same_seed(
        noisy: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = noisy
    first, second = linear_fit(x, y, seed=7), linear_fit(x, y, seed=7)
    assert np.array_equal(first.band_low, second.band_low)
    assert np.array_equal(first.band_high, second.band_high)
    other = linear_fit(x, y, seed=8)
    assert not np.array_equal(first.band_low, other.band_low)


def test_it_keeps_the_fitted_line_inside_its_band(noisy: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = noisy
    fit = linear_fit(x, y)
    line = fit.predict(fit.grid)
    assert fit.band_low.shape == fit.band_high.shape == fit.grid.shape == (50,)
    assert np.all(fit.band_low <= line) and np.all(line <= fit.band_high)
    assert np.all(fit.band_low < fit.band_high)


def test_it_evaluates_the_band_on_a_given_grid(noisy: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = noisy
    fit = linear_fit(x, y, grid=np.array([0.0, 0.5, 1.0]))
    assert fit.grid.tolist() == [0.0, 0.5, 1.0]
    assert fit.band_low.shape == (3,)
    assert np.all(fit.band_low <= fit.predict(fit.grid))
    assert np.all(fit.predict(fit.grid) <= fit.band_high)


@pytest.mark.parametrize(("x", "y", "message"), [
    ([0.1, 0.2], [0.1, 0.2], "at least 3"),
    ([0.5, 0.5, 0.5], [0.1, 0.2, 0.3], "distinct"),
    ([0.1, 0.2, 0.3], [0.1, 0.2], "at least 3"),
])
def test_it_refuses_a_fit_it_cannot_make(x: list[float], y: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        linear_fit(np.array(x), np.array(y))


# A model on C = 100 correctable examples and B = 900 others
ACC_C, N_C, ACC_B, N_B = 0.35, 100, 0.92, 900


def test_it_starts_the_noise_prevalence_curve_at_the_full_pruned_set() -> None:
    prevalence, accuracy = noise_prevalence_curve(acc_c=ACC_C, n_c=N_C, acc_b=ACC_B, n_b=N_B,
                                                  x=np.array([0.0]))
    assert accuracy[0] == pytest.approx((ACC_C * N_C + ACC_B * N_B) / (N_C + N_B), rel=1e-15)
    assert prevalence[0] == pytest.approx(N_C / (N_C + N_B), rel=1e-15)


def test_it_ends_the_noise_prevalence_curve_on_the_correctable_set() -> None:
    prevalence, accuracy = noise_prevalence_curve(acc_c=ACC_C, n_c=N_C, acc_b=ACC_B, n_b=N_B,
                                                  x=np.array([1.0]))
    assert accuracy[0] == pytest.approx(ACC_C, rel=1e-15)
    assert prevalence[0] == 1.0


def test_it_follows_the_appendix_e_formula_between_the_ends() -> None:
    x = np.array([0.25, 0.5, 0.9])
    prevalence, accuracy = noise_prevalence_curve(acc_c=ACC_C, n_c=N_C, acc_b=ACC_B, n_b=N_B,
                                                  x=x)
    for i, xi in enumerate(x.tolist()):
        kept = (1 - xi) * N_B
        assert accuracy[i] == pytest.approx((ACC_C * N_C + kept * ACC_B) / (N_C + kept),
                                            rel=1e-14)
        assert prevalence[i] == pytest.approx(N_C / (N_C + N_B - xi * N_B), rel=1e-14)
    # x = 0.5 by hand: A = (35 + 414) / 550, N = 100 / 550
    assert accuracy[1] == pytest.approx(449 / 550, rel=1e-14)
    assert prevalence[1] == pytest.approx(100 / 550, rel=1e-14)


def _curve_at(acc_c: float, acc_b: float, x: float) -> float:
    return float(noise_prevalence_curve(acc_c=acc_c, n_c=N_C, acc_b=acc_b, n_b=N_B,
                                        x=np.array([x]))[1][0])


def test_it_finds_where_two_models_curves_cross() -> None:
    # first is better on B, second on C: the second overtakes as B is removed
    first, second = (0.2, 0.9), (0.6, 0.8)
    x = noise_prevalence_crossing(first=first, second=second, n_c=N_C, n_b=N_B)
    # 100 * (-0.4) + (1 - x) * 900 * 0.1 = 0  ->  x = 5 / 9
    assert x == pytest.approx(5 / 9, rel=1e-12)
    assert _curve_at(*first, x) == pytest.approx(_curve_at(*second, x), rel=1e-12)
    assert _curve_at(*first, 0.0) > _curve_at(*second, 0.0)
    assert _curve_at(*first, 1.0) < _curve_at(*second, 1.0)


def test_it_finds_no_crossing_when_one_model_is_better_everywhere() -> None:
    assert noise_prevalence_crossing(first=(0.7, 0.95), second=(0.6, 0.8), n_c=N_C,
                                     n_b=N_B) is None
    # the lines would meet only at x < 0 (before any removal)
    assert noise_prevalence_crossing(first=(0.2, 0.9), second=(0.6, 0.87), n_c=N_C,
                                     n_b=N_B) is None


def test_it_finds_no_crossing_when_the_models_tie_on_b() -> None:
    assert noise_prevalence_crossing(first=(0.2, 0.9), second=(0.6, 0.9), n_c=N_C,
                                     n_b=N_B) is None
    assert noise_prevalence_crossing(first=(0.6, 0.9), second=(0.6, 0.9), n_c=N_C,
                                     n_b=N_B) is None


def test_it_finds_a_crossing_at_the_end_when_the_models_tie_on_c() -> None:
    assert noise_prevalence_crossing(first=(0.5, 0.9), second=(0.5, 0.8), n_c=N_C,
                                     n_b=N_B) == 1.0


@pytest.mark.parametrize("scale", ["probit", "logit"])
def test_it_fits_on_probit_and_logit_scales_like_a_direct_computation(scale: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.uniform(0.55, 0.97, size=25)
    y = np.clip(x - 0.08 + rng.normal(0, 0.01, size=25), 0.01, 0.99)
    forward = {"probit": scipy_stats.norm.ppf, "logit": lambda a: np.log(a / (1 - a))}[scale]
    back = {"probit": scipy_stats.norm.cdf, "logit": lambda z: 1 / (1 + np.exp(-z))}[scale]
    slope, intercept = np.polyfit(forward(x), forward(y), 1)
    fit = linear_fit(x, y, scale=scale, n_boot=300, seed=2)
    assert fit.scale == scale
    assert fit.slope == pytest.approx(slope, rel=1e-12)
    assert fit.intercept == pytest.approx(intercept, rel=1e-12, abs=1e-14)
    predicted = back(slope * forward(x) + intercept)
    np.testing.assert_allclose(fit.residuals, y - predicted, rtol=0, atol=1e-13)
    np.testing.assert_allclose(fit.predict(x), predicted, rtol=0, atol=1e-13)
    # the band: bootstrap lines on the transformed scale, their percentiles mapped back
    idx = np.random.default_rng(2).integers(0, x.size, size=(300, x.size))
    lines = []
    for rows in idx:
        if np.ptp(forward(x[rows])) > 0:
            b_slope, b_intercept = np.polyfit(forward(x[rows]), forward(y[rows]), 1)
            lines.append(b_slope * forward(fit.grid) + b_intercept)
    low, high = np.percentile(np.array(lines), [2.5, 97.5], axis=0)
    np.testing.assert_allclose(fit.band_low, back(low), rtol=0, atol=1e-10)
    np.testing.assert_allclose(fit.band_high, back(high), rtol=0, atol=1e-10)
    assert np.all(fit.band_low <= fit.predict(fit.grid) + 1e-12)


def test_it_refuses_an_accuracy_of_one_on_the_logit_scale_and_an_unknown_scale() -> None:
    x = np.array([0.5, 0.7, 1.0])
    with pytest.raises(ValueError, match="0 or 1 cannot be fitted on the logit scale"):
        linear_fit(x, x, scale="logit")
    with pytest.raises(ValueError, match="unknown fit scale 'log'"):
        linear_fit(x, x, scale="log")
