"""The area-under-the-loss-curve audit: the probe recovers injected label noise on real MNIST
images, is bit-for-bit reproducible, and the mixture reads the right component."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.mixture import GaussianMixture

from tests.workers.audits.conftest import NoisySet
from workers.audits import (
    AulConfig,
    AulResult,
    aul_scores,
    fit_mixture,
    histogram,
    precision_recall,
    run_aul_audit,
    train_probe,
)
from workers.audits.probe import ProbeCNN, as_image_tensor, deterministic_torch

# Small enough for CI (about 1 s on one core), long enough to separate the flipped labels.
NOISY_CONFIG = AulConfig(epochs=5, batch_size=64, seed=0)


@pytest.fixture(scope="module")
def noisy_result(noisy_mnist: NoisySet) -> AulResult:
    return _run(noisy_mnist)


def _run(noisy: NoisySet) -> AulResult:
    return run_aul_audit(noisy.images, noisy.labels, config=NOISY_CONFIG, num_classes=10)


def test_it_recovers_most_flipped_labels(noisy_mnist: NoisySet, noisy_result: AulResult) -> None:
    scores = precision_recall(noisy_result.flagged, set(noisy_mnist.flipped.tolist()))
    # Exact figures for seed 0 (they prove the run is reproducible) ...
    assert (noisy_result.num_flagged, scores["true_positives"]) == (182, 95)
    assert round(noisy_result.noise_rate, 4) == 0.2081
    # ... and bounds that say the method works: most flips found, flags not mostly noise.
    assert scores["recall"] >= 0.9
    assert scores["precision"] >= 0.4
    # flipped examples have a far larger area under their loss curve
    flipped = np.zeros(1000, dtype=bool)
    flipped[noisy_mnist.flipped] = True
    assert np.median(noisy_result.aul[flipped]) > 3 * np.median(noisy_result.aul[~flipped])


def test_it_suggests_the_true_label_for_most_flagged_flips(
    noisy_mnist: NoisySet, noisy_result: AulResult, mnist_labels: np.ndarray
) -> None:
    true = mnist_labels[:1000]
    flagged = noisy_result.flagged
    flipped = np.zeros(1000, dtype=bool)
    flipped[noisy_mnist.flipped] = True
    hits = flagged[flipped[flagged]]  # the 95 flagged flips
    # the suggestion is never the given label, and is the true one for 86 of the 95 (seed 0)
    assert not (noisy_result.suggested_labels == noisy_mnist.labels).any()
    assert int((noisy_result.suggested_labels[hits] == true[hits]).sum()) == 86
    # the last epoch's argmax: 822 of 1,000 agree with the given labels, 907 with the truth
    assert int((noisy_result.predicted_labels == noisy_mnist.labels).sum()) == 822
    assert int((noisy_result.predicted_labels == true).sum()) == 907
    assert noisy_result.suggested_labels.dtype == np.int64
    assert noisy_result.predicted_labels.shape == (1000,)
    top = noisy_result.evidence()[0]
    assert top == {**top, "index": 768, "given_label": 0, "suggested_label": 1,
                   "predicted_label": 1}


def test_it_suggests_the_argmax_without_the_given_label(noisy_mnist: NoisySet) -> None:
    """The predicted and suggested classes are the argmaxes of the last epoch's training-pass
    logits (replayed here with the same seed and a model rebuilt from scratch)."""
    images, labels = noisy_mnist.images[:64], noisy_mnist.labels[:64]
    run = train_probe(images, labels, epochs=1, batch_size=64, lr=0.01, seed=3, num_classes=10)
    with deterministic_torch(3, 1, torch.device("cpu")):
        model = ProbeCNN(1, 28, 28, 10)
        torch.randperm(64, generator=torch.Generator().manual_seed(3))
        logits = model(as_image_tensor(images)).detach().numpy()
    assert np.array_equal(run.predicted, logits.argmax(axis=1))
    masked = logits.copy()
    masked[np.arange(64), labels] = -np.inf
    assert np.array_equal(run.suggested, masked.argmax(axis=1))
    assert np.array_equal(run.losses, train_probe(images, labels, epochs=1, batch_size=64,
                                                         lr=0.01, seed=3, num_classes=10).losses)


def test_it_gives_identical_aul_for_the_same_seed(
    noisy_mnist: NoisySet, noisy_result: AulResult
) -> None:
    again = _run(noisy_mnist)
    assert np.array_equal(again.losses, noisy_result.losses)
    assert np.array_equal(again.aul, noisy_result.aul)
    assert np.array_equal(again.flagged, noisy_result.flagged)
    assert np.array_equal(again.suggested_labels, noisy_result.suggested_labels)
    assert np.array_equal(again.predicted_labels, noisy_result.predicted_labels)


def test_it_depends_on_the_seed(noisy_mnist: NoisySet) -> None:
    kwargs: dict[str, Any] = {"epochs": 1, "batch_size": 64, "lr": 0.01}
    a = train_probe(noisy_mnist.images[:200], noisy_mnist.labels[:200], seed=0, **kwargs).losses
    b = train_probe(noisy_mnist.images[:200], noisy_mnist.labels[:200], seed=1, **kwargs).losses
    assert a.shape == (1, 200) and a.dtype == np.float32
    assert not np.array_equal(a, b)


def test_it_leaves_global_torch_state_alone(noisy_mnist: NoisySet) -> None:
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    train_probe(
        noisy_mnist.images[:64], noisy_mnist.labels[:64], epochs=1, batch_size=32, lr=0.01,
        seed=7, num_threads=threads + 1,
    )
    assert torch.equal(torch.rand(3), expected_next)  # the caller's RNG stream is untouched
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic


def test_it_records_every_example_every_epoch_and_reports_progress(
    noisy_mnist: NoisySet,
) -> None:
    calls: list[tuple[int, int]] = []
    losses = train_probe(
        noisy_mnist.images[:100], noisy_mnist.labels[:100], epochs=3, batch_size=32, lr=0.01,
        seed=0, num_classes=10, progress=lambda done, total: calls.append((done, total)),
    ).losses
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert losses.shape == (3, 100)
    assert np.isfinite(losses).all() and (losses > 0).all()


def test_it_accepts_colour_images_in_any_scale() -> None:
    rng = np.random.default_rng(0)
    images = rng.random((40, 3, 8, 8)).astype(np.float32)
    labels = np.arange(40) % 4
    common: dict[str, Any] = {"epochs": 2, "batch_size": 16, "lr": 0.01, "seed": 0}
    small = train_probe(images, labels, **common).losses
    # per-channel standardisation makes 0-1 and 0-255 images the same input
    large = train_probe(images * 255.0, labels, **common).losses
    assert small.shape == (2, 40)
    assert np.allclose(small, large, rtol=0, atol=1e-5)


def test_it_sums_losses_over_epochs() -> None:
    losses = np.array([[1.0, 2.0, 0.5], [0.25, 1.0, 0.5]], dtype=np.float32)
    assert aul_scores(losses).tolist() == [1.25, 3.0, 1.0]
    with pytest.raises(ValueError, match="non-finite"):
        aul_scores(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"\[epochs, N\]"):
        aul_scores(np.ones(3))


def _two_clusters() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([rng.normal(1.0, 0.5, 900), rng.normal(6.0, 1.5, 100)])


def test_it_finds_the_high_mean_component_whatever_sklearns_order() -> None:
    values = _two_clusters().reshape(-1, 1)
    # With these seeds sklearn itself returns the components in opposite orders.
    assert np.argmax(GaussianMixture(2, random_state=0).fit(values).means_.ravel()) == 1
    assert np.argmax(GaussianMixture(2, random_state=4).fit(values).means_.ravel()) == 0
    first, second = fit_mixture(_two_clusters(), 0), fit_mixture(_two_clusters(), 4)
    assert (first.sklearn_high, second.sklearn_high) == (1, 0)
    for fit in (first, second):
        assert fit.means[1] > fit.means[0]
        assert round(fit.means[0], 2) == 0.99 and round(fit.means[1], 2) == 5.68
        assert round(fit.noise_rate, 3) == 0.098
        assert fit.noise_rate == fit.weights[1]
    assert np.allclose(first.posterior, second.posterior, rtol=0, atol=1e-9)
    assert np.array_equal(first.flags, second.flags)
    assert np.array_equal(first.flagged, second.flagged)
    assert int(first.flags.sum()) == 97
    assert set(first.flagged.tolist()) == set(np.flatnonzero(first.flags).tolist())


def test_it_does_not_flag_the_far_low_tail() -> None:
    rng = np.random.default_rng(0)
    # A wide high component also "owns" values far below the narrow low one.
    values = np.concatenate([rng.normal(5.0, 0.3, 900), rng.normal(8.0, 3.0, 100), [0.0, 0.1]])
    fit = fit_mixture(values, 0)
    assert fit.posterior[-1] > 0.5 and fit.posterior[-2] > 0.5
    assert not fit.flags[-1] and not fit.flags[-2]
    assert (values[fit.flags] > fit.means[0]).all()


def test_it_ranks_flags_by_posterior_then_aul() -> None:
    values = _two_clusters()
    fit = fit_mixture(values, 0)
    keys = list(zip(fit.posterior[fit.flagged], values[fit.flagged], strict=True))
    assert keys == sorted(keys, reverse=True)


def test_it_scales_the_fitted_curves_to_counts() -> None:
    values = _two_clusters()
    fit = fit_mixture(values, 0)
    hist = histogram(values, 40, fit)
    assert hist.counts.sum() == 1000 and hist.edges.shape == (41,) and hist.centres.shape == (40,)
    assert hist.low_curve is not None and hist.high_curve is not None
    width = hist.edges[1] - hist.edges[0]
    mean, std, weight = fit.means[1], fit.stds[1], fit.weights[1]
    expected_high = (
        1000 * width * weight * np.exp(-0.5 * ((hist.centres - mean) / std) ** 2)
        / (std * np.sqrt(2 * np.pi))
    )
    assert np.allclose(hist.high_curve, expected_high, rtol=1e-12, atol=0)
    # the two curves together account for (almost) all 1,000 examples
    assert abs(float((hist.low_curve + hist.high_curve).sum()) - 1000) < 20
    assert histogram(values, 10).low_curve is None


def test_it_rejects_bad_input(noisy_mnist: NoisySet) -> None:
    with pytest.raises(ValueError, match="all AUL values are equal"):
        fit_mixture(np.ones(10))
    with pytest.raises(ValueError, match="at least 2 AUL values"):
        fit_mixture(np.ones(1))
    with pytest.raises(ValueError, match=r"\[N, H, W\] or \[N, C, H, W\]"):
        train_probe(np.zeros((4, 8)), np.zeros(4, dtype=int), epochs=1, batch_size=2,
                           lr=0.1, seed=0)
    with pytest.raises(ValueError, match="one label per image"):
        train_probe(noisy_mnist.images[:10], noisy_mnist.labels[:9], epochs=1,
                           batch_size=2, lr=0.1, seed=0)
    with pytest.raises(ValueError, match="outside the 3 classes"):
        train_probe(noisy_mnist.images[:10], noisy_mnist.labels[:10], epochs=1,
                           batch_size=2, lr=0.1, seed=0, num_classes=3)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        AulConfig(epochs=0)


def test_it_produces_plain_json(noisy_result: AulResult) -> None:
    data = noisy_result.to_dict(include_scores=True)
    assert json.loads(json.dumps(data)) == data
    assert data["num_flagged"] == len(data["evidence"]) == noisy_result.num_flagged
    assert len(data["aul"]) == 1000
    assert data["config"]["epochs"] == 5
    assert [c["name"] for c in data["mixture"]["components"]] == ["low", "high"]
    top = data["evidence"][0]
    assert top["index"] == int(noisy_result.flagged[0]) and top["rank"] == 1
    assert [e["suggested_label"] for e in data["evidence"]] == \
        noisy_result.suggested_labels[noisy_result.flagged].tolist()
    assert "suggested_labels" not in data  # no per-example arrays beyond the flags
