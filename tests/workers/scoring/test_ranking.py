"""Tests for workers.scoring.ranking: ranks, rank shifts, the new-test-set fit and the
noise-prevalence figures, on hand-made records and on the 30 real CIFAR-10 models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.workers.scoring.realdata import MODELS, PREDICTIONS_DIR, SUFFIX
from tests.workers.scoring.support import Compiled
from workers.scoring.bundles import builtin_bundle
from workers.scoring.label_set_builders import CompiledLabelSet
from workers.scoring.predictions import parse_predictions
from workers.scoring.ranking import (
    new_test_set_fit,
    noise_prevalence,
    noise_prevalence_crossings,
    ranks,
)
from workers.scoring.scorer import score_predictions


@pytest.fixture(scope="session")
def cifar10_sets(compiled: Compiled) -> list[CompiledLabelSet]:
    return [compiled("cifar10", ls.slug) for ls in builtin_bundle("cifar10").label_sets]


@pytest.fixture(scope="session")
def direct_accuracies(data_dir: Path) -> dict[str, np.ndarray]:
    """Per model (MODELS order), accuracy by plain comparison with the label files."""
    out = {}
    for slug, folder, label_file in (("original", "original", "original_labels.npy"),
                                     ("cifar10.1-v4", "v4", "cifar10.1_v4_labels.npy"),
                                     ("cifar10.1-v6", "v6", "cifar10.1_v6_labels.npy")):
        labels = np.load(data_dir / "cifar10" / label_file)
        out[slug] = np.array([
            np.mean(np.array(json.loads(
                (PREDICTIONS_DIR / f"{folder}_predictions/{m}{SUFFIX}").read_text())) == labels)
            for m in MODELS])
    return out


@pytest.fixture(scope="session")
def model_records(cifar10_sets: list[CompiledLabelSet]) -> list[dict]:
    """score_predictions records of the 30 real models on every CIFAR-10 label set."""
    bench = builtin_bundle("cifar10")
    records = []
    for model in MODELS:
        preds = {slug: parse_predictions(PREDICTIONS_DIR / f"{folder}_predictions/{model}{SUFFIX}",
                                         num_examples=bench.example_set(slug).size, num_classes=10)
                 for slug, folder in (("cifar10-test", "original"), ("cifar10.1-v4", "v4"),
                                      ("cifar10.1-v6", "v6"))}
        records.append(score_predictions(preds, cifar10_sets).records)
    return records


def _direct_ranks(values: list[float]) -> list[int]:
    """1 + the number of strictly better values; missing (None) values rank last."""
    key = [float("-inf") if v is None else v for v in values]
    return [1 + sum(other > mine for other in key) for mine in key]


def _rec(**accuracies: float | None) -> dict[str, dict]:
    return {slug: {"accuracy": acc} for slug, acc in accuracies.items()}


# ---------------------------------------------------------------- hand-made records

SUBMISSIONS = [
    _rec(original=0.90, corrected=0.80),
    _rec(original=0.85, corrected=0.95),
    _rec(original=0.85, corrected=0.70),
    _rec(original=0.70),  # never scored on corrected
    _rec(original=None, corrected=0.90),  # scored, but with no examples
]


def test_it_ranks_submissions_on_a_label_set_with_missing_ones_last() -> None:
    assert ranks(SUBMISSIONS, "original").tolist() == [1, 2, 2, 4, 5]
    assert ranks(SUBMISSIONS, "corrected").tolist() == [3, 1, 4, 5, 2]
    assert ranks(SUBMISSIONS, "real").tolist() == [1, 1, 1, 1, 1]


def _corrected_record(acc_c_original: float | None, acc_c_corrected: float | None,
                      acc_b: float | None, n_c: int = 100, n_b: int = 900) -> dict:
    return {"corrected": {"accuracy": 0.5, "noise_prevalence": {
        "n_c": n_c, "n_b": n_b, "acc_c_original": acc_c_original,
        "acc_c_corrected": acc_c_corrected, "acc_b": acc_b}}}


def test_it_samples_both_noise_prevalence_curves_at_21_removal_fractions() -> None:
    curves = noise_prevalence(_corrected_record(0.2, 0.6, 0.9), slug="corrected")
    assert curves["x"] == pytest.approx([i / 20 for i in range(21)], abs=1e-15)
    for name, acc_c in (("original", 0.2), ("corrected", 0.6)):
        for i, x in enumerate(curves["x"]):
            kept = (1 - x) * 900
            assert curves[name]["accuracy"][i] == pytest.approx(
                (acc_c * 100 + kept * 0.9) / (100 + kept), rel=1e-14)
            assert curves[name]["prevalence"][i] == pytest.approx(100 / (1000 - x * 900),
                                                                  rel=1e-14)
        assert curves[name]["prevalence"][-1] == 1.0
        assert curves[name]["accuracy"][-1] == pytest.approx(acc_c, rel=1e-14)


def test_it_samples_the_noise_prevalence_curves_at_given_fractions() -> None:
    curves = noise_prevalence(_corrected_record(0.2, 0.6, 0.9), x=np.array([0.0, 0.5]),
                              slug="corrected")
    assert curves["x"] == [0.0, 0.5]
    assert curves["original"]["accuracy"] == pytest.approx([(20 + 810) / 1000, (20 + 405) / 550],
                                                           rel=1e-14)
    assert curves["corrected"]["accuracy"] == pytest.approx([(60 + 810) / 1000,
                                                             (60 + 405) / 550], rel=1e-14)
    assert curves["corrected"]["prevalence"] == pytest.approx([0.1, 100 / 550], rel=1e-14)


@pytest.mark.parametrize("records", [
    {},
    {"original": {"accuracy": 0.9}},
    {"corrected": {"accuracy": 0.9}},
    _corrected_record(None, None, 0.9),
    _corrected_record(0.3, 0.4, None),
])
def test_it_gives_no_noise_prevalence_curve_without_its_figures(records: dict) -> None:
    assert noise_prevalence(records, slug="corrected") is None


def test_it_finds_where_two_submissions_curves_cross() -> None:
    first = _corrected_record(0.2, 0.5, 0.9)
    second = _corrected_record(0.6, 0.55, 0.8)
    out = noise_prevalence_crossings(first, second, slug="corrected")
    # original: 100 * (0.2 - 0.6) + (1 - x) * 900 * 0.1 = 0 -> x = 5/9
    assert out["original"]["x"] == pytest.approx(5 / 9, rel=1e-12)
    assert out["original"]["prevalence"] == pytest.approx(100 / (1000 - 500), rel=1e-12)
    # corrected: 100 * (-0.05) + (1 - x) * 90 = 0 -> x = 1 - 5/90, inside [0, 1]
    assert out["corrected"]["x"] == pytest.approx(1 - 5 / 90, rel=1e-12)
    assert out["corrected"]["prevalence"] == pytest.approx(100 / (1000 - 850), rel=1e-12)
    # at the crossing both curves have the same accuracy
    for name in ("original", "corrected"):
        x = np.array([out[name]["x"]])
        a = noise_prevalence(first, x=x, slug="corrected")[name]["accuracy"][0]
        b = noise_prevalence(second, x=x, slug="corrected")[name]["accuracy"][0]
        assert a == pytest.approx(b, rel=1e-12)


def test_it_reports_no_crossing_where_one_submission_stays_ahead() -> None:
    first = _corrected_record(0.2, 0.7, 0.9)
    second = _corrected_record(0.6, 0.6, 0.8)
    out = noise_prevalence_crossings(first, second, slug="corrected")
    assert out["original"]["x"] == pytest.approx(5 / 9, rel=1e-12)
    assert out["corrected"] is None  # ahead on C and on B: the lines meet only at x > 1


def test_it_reports_no_crossing_for_submissions_tied_on_b() -> None:
    first = _corrected_record(0.2, 0.7, 0.9)
    second = _corrected_record(0.6, 0.6, 0.9)
    assert noise_prevalence_crossings(first, second, slug="corrected") == {
        "original": None, "corrected": None}


# ---------------------------------------------------------------- the 30 real models


def test_it_ranks_the_real_models_like_their_direct_accuracies(
        model_records: list[dict], direct_accuracies: dict[str, np.ndarray]) -> None:
    assert len(model_records) == 30
    for slug in ("original", "cifar10.1-v4", "cifar10.1-v6"):
        assert ranks(model_records, slug).tolist() == _direct_ranks(
            direct_accuracies[slug].tolist())
    # the new test set does reorder the models (the board's rank shifts are these differences)
    assert ranks(model_records, "cifar10.1-v6").tolist() != ranks(model_records,
                                                                  "original").tolist()


@pytest.mark.parametrize("slug", ["cifar10.1-v4", "cifar10.1-v6"])
def test_it_fits_new_against_original_accuracy_like_polyfit(
        slug: str, model_records: list[dict], direct_accuracies: dict[str, np.ndarray]) -> None:
    x, y = direct_accuracies["original"], direct_accuracies[slug]
    slope, intercept = np.polyfit(x, y, 1)
    fit, used = new_test_set_fit(model_records, slug, original="original")
    assert used.tolist() == list(range(30))
    assert fit.slope == slope and fit.intercept == intercept
    assert fit.residuals.tolist() == (y - (slope * x + intercept)).tolist()
    assert fit.slope > 1  # Recht et al.: the gap grows for weaker models (slope above 1)
    assert fit.grid[0] == x.min() and fit.grid[-1] == x.max()
    line = fit.predict(fit.grid)
    assert np.all(fit.band_low <= line) and np.all(line <= fit.band_high)
    again, _ = new_test_set_fit(model_records, slug, original="original")
    assert np.array_equal(fit.band_low, again.band_low)
    assert np.array_equal(fit.band_high, again.band_high)


@pytest.mark.parametrize("scale", ["probit", "logit"])
def test_it_fits_the_real_models_on_probit_and_logit_scales_like_polyfit(
        scale: str, model_records: list[dict], direct_accuracies: dict[str, np.ndarray]) -> None:
    from scipy.stats import norm

    forward = {"probit": norm.ppf, "logit": lambda a: np.log(a) - np.log1p(-a)}[scale]
    x, y = direct_accuracies["original"], direct_accuracies["cifar10.1-v6"]
    slope, intercept = np.polyfit(forward(x), forward(y), 1)
    fit, used = new_test_set_fit(model_records, "cifar10.1-v6", scale=scale, original="original")
    assert used.tolist() == list(range(30))
    assert fit.slope == pytest.approx(slope, rel=1e-12)
    assert fit.intercept == pytest.approx(intercept, rel=1e-12)
    predicted = {"probit": norm.cdf, "logit": lambda z: 1 / (1 + np.exp(-z))}[scale](
        slope * forward(x) + intercept)
    np.testing.assert_allclose(fit.residuals, y - predicted, rtol=0, atol=1e-13)


def test_it_fits_only_the_submissions_having_both_accuracies(
        model_records: list[dict], direct_accuracies: dict[str, np.ndarray]) -> None:
    partial = [dict(r) for r in model_records]
    dropped = {2, 11, 29}
    for i in dropped:
        del partial[i]["cifar10.1-v6"]
    keep = [i for i in range(30) if i not in dropped]
    fit, used = new_test_set_fit(partial, "cifar10.1-v6", original="original")
    assert used.tolist() == keep
    slope, intercept = np.polyfit(direct_accuracies["original"][keep],
                                  direct_accuracies["cifar10.1-v6"][keep], 1)
    assert (fit.slope, fit.intercept) == (slope, intercept)
    assert fit.residuals.size == 27


def test_it_makes_no_fit_from_fewer_than_three_submissions(model_records: list[dict]) -> None:
    assert new_test_set_fit(model_records[:2], "cifar10.1-v6", original="original") is None
    assert new_test_set_fit(model_records, "imagenetv2", original="original") is None


def test_it_draws_noise_prevalence_curves_of_the_real_models(
        data_dir: Path, model_records: list[dict]) -> None:
    original = np.load(data_dir / "cifar10/original_labels.npy").astype(np.int64)
    mturk = json.loads((data_dir / "cifar10/cleanlab_mturk.json").read_text())
    correctable = np.zeros(10_000, dtype=bool)
    unknown = np.zeros(10_000, dtype=bool)
    for entry in mturk:
        votes = entry["mturk"]
        if votes.get("given", 0) >= 3:
            continue
        if votes.get("guessed", 0) >= 3:
            correctable[entry["id"]] = True
        else:
            unknown[entry["id"]] = True
    n_c, n_b = int(correctable.sum()), int((~unknown & ~correctable).sum())
    curves = noise_prevalence(model_records[0], slug="corrected")
    assert curves["original"]["prevalence"][0] == pytest.approx(n_c / (n_c + n_b), rel=1e-14)
    assert curves["original"]["prevalence"][-1] == 1.0
    top1 = np.array(json.loads(
        (PREDICTIONS_DIR / f"original_predictions/{MODELS[0]}{SUFFIX}").read_text()))
    acc_c = np.mean(top1[correctable] == original[correctable])
    assert curves["original"]["accuracy"][-1] == pytest.approx(acc_c, rel=1e-14)
    crossings = noise_prevalence_crossings(model_records[0], model_records[1], slug="corrected")
    assert set(crossings) == {"original", "corrected"}
