"""Confident learning over submitted probabilities: cleanlab's own answer on the real MNIST
cross-validated probabilities, averaging, logits, and input validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cleanlab.count import num_label_issues
from cleanlab.filter import find_label_issues

from workers.audits import (
    ConfidentLearningOptions,
    average_probabilities,
    run_confident_learning,
    softmax,
)


def test_it_flags_exactly_what_cleanlab_flags_on_real_mnist(
    mnist_labels: np.ndarray, mnist_probs: np.ndarray
) -> None:
    expected = find_label_issues(
        mnist_labels, mnist_probs, return_indices_ranked_by="self_confidence", n_jobs=1
    )
    result = run_confident_learning(mnist_labels, [mnist_probs], num_classes=10)
    assert result.num_flagged == len(expected) == 15
    assert np.array_equal(result.flagged, expected)  # same examples, same ranking
    assert result.flagged[:3].tolist() == [2597, 947, 9729]
    assert result.estimated_num_issues == num_label_issues(mnist_labels, mnist_probs) == 15
    assert result.estimated_noise_rate == 15 / 10_000
    assert result.flagged_fraction == 15 / 10_000
    # ranked by self-confidence, lowest first
    assert np.all(np.diff(result.self_confidence) >= 0)


def test_it_is_deterministic(mnist_labels: np.ndarray, mnist_probs: np.ndarray) -> None:
    first = run_confident_learning(mnist_labels, [mnist_probs])
    second = run_confident_learning(mnist_labels, [mnist_probs])
    assert np.array_equal(first.flagged, second.flagged)
    assert first.to_dict() == second.to_dict()


def test_it_suggests_the_argmax_and_reports_self_confidence(
    mnist_labels: np.ndarray, mnist_probs: np.ndarray
) -> None:
    result = run_confident_learning(mnist_labels, [mnist_probs])
    flagged = result.flagged
    assert np.array_equal(result.suggested_labels, mnist_probs[flagged].argmax(axis=1))
    assert np.array_equal(result.given_labels, mnist_labels[flagged])
    assert np.array_equal(result.self_confidence, mnist_probs[flagged, mnist_labels[flagged]])
    first = result.evidence[0]
    assert first["index"] == 2597 and first["rank"] == 1
    assert first["given_label"] == 5 and first["suggested_label"] == 3
    assert [e["suggested_label"] for e in result.evidence] == result.suggested_labels.tolist()


def test_it_averages_two_submissions(mnist_labels: np.ndarray, mnist_probs: np.ndarray) -> None:
    # A second "submission": the real probabilities with classes 3 and 5 swapped in every row.
    swapped = mnist_probs[:, [0, 1, 2, 5, 4, 3, 6, 7, 8, 9]]
    mean = (mnist_probs + swapped) / 2
    assert np.array_equal(average_probabilities([mnist_probs, swapped]), mean)
    expected = find_label_issues(
        mnist_labels, mean, return_indices_ranked_by="self_confidence", n_jobs=1
    )
    result = run_confident_learning(
        mnist_labels, [mnist_probs, swapped], submission_ids=["real", "swapped"]
    )
    assert result.num_submissions == 2
    assert np.array_equal(result.flagged, expected)
    assert np.array_equal(result.suggested_labels, mean[result.flagged].argmax(axis=1))
    flagged = result.flagged
    assert np.array_equal(result.self_confidence, mean[flagged, mnist_labels[flagged]])
    # each submission's own view of the top-ranked example is in its evidence
    top = result.evidence[0]
    i = top["index"]
    assert [s["submission"] for s in top["submissions"]] == ["real", "swapped"]
    assert [s["top1"] for s in top["submissions"]] == [
        int(mnist_probs[i].argmax()),
        int(swapped[i].argmax()),
    ]
    assert top["submissions"][1]["given_probability"] == swapped[i, mnist_labels[i]]


def test_it_applies_softmax_to_logits(mnist_labels: np.ndarray, mnist_probs: np.ndarray) -> None:
    rng = np.random.default_rng(1)
    logits = rng.normal(0.0, 3.0, size=(10_000, 10)) + 1000.0  # large: must not overflow
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(softmax(logits), expected, rtol=0, atol=1e-15)
    options = ConfidentLearningOptions(logits=True)
    mean = average_probabilities([logits, np.log(mnist_probs + 1e-12)], options)
    assert np.allclose(mean.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    result = run_confident_learning(mnist_labels, [logits, np.log(mnist_probs + 1e-12)], options)
    assert np.array_equal(
        result.flagged,
        find_label_issues(mnist_labels, mean, return_indices_ranked_by="self_confidence", n_jobs=1),
    )


def test_it_passes_the_filter_option_to_cleanlab(
    mnist_labels: np.ndarray, mnist_probs: np.ndarray
) -> None:
    result = run_confident_learning(
        mnist_labels, [mnist_probs], ConfidentLearningOptions(filter_by="predicted_neq_given")
    )
    # predicted_neq_given flags every example whose argmax differs from its label
    assert result.num_flagged == int((mnist_probs.argmax(axis=1) != mnist_labels).sum()) == 87


def test_it_produces_plain_json(mnist_labels: np.ndarray, mnist_probs: np.ndarray) -> None:
    data = run_confident_learning(mnist_labels, [mnist_probs]).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["num_flagged"] == 15 and len(data["evidence"]) == 15
    assert data["options"]["filter_by"] == "prune_by_noise_rate"


def _probs(n: int = 20, k: int = 3) -> np.ndarray:
    return np.full((n, k), 1.0 / k)


def _labels(n: int = 20, k: int = 3) -> np.ndarray:
    return np.arange(n) % k


@pytest.mark.parametrize(
    ("labels", "matrices", "kwargs", "message"),
    [
        (_labels(), [], {}, "no probability matrices"),
        (_labels(), [_probs(), _probs(20, 4)], {}, r"submission 1: shape \(20, 4\) differs"),
        (_labels(), [_probs(19)], {}, "20 labels but the probability matrices have 19 rows"),
        (_labels(), [_probs()], {"num_classes": 10}, "have 3 columns, expected 10"),
        (_labels(20, 5), [_probs()], {}, "label 4 is outside the 3 classes"),
        (_labels().astype(float), [_probs()], {}, "labels must be integers"),
        (_labels() - 1, [_probs()], {}, "labels must be >= 0"),
        (_labels(), [_probs()[:, 0]], {}, "expected a 2-D"),
        (_labels(), [np.where(np.eye(20, 3) == 1, np.nan, _probs())], {}, "non-finite .* row 0"),
        (_labels(), [_probs() * 2], {}, r"row 0 sums to 2, not 1 .*logits=True"),
        (_labels(), [_probs() - 0.5], {}, "negative probability in row 0"),
        (_labels(), [_probs()], {"submission_ids": ["a", "b"]}, "2 submission ids for 1"),
    ],
)
def test_it_rejects_bad_input(
    labels: np.ndarray, matrices: list[np.ndarray], kwargs: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        run_confident_learning(labels, matrices, **kwargs)


def test_it_rejects_unknown_options() -> None:
    with pytest.raises(ValueError, match="filter_by must be one of prune_by_noise_rate"):
        ConfidentLearningOptions(filter_by="prune")
    with pytest.raises(ValueError, match="frac_noise"):
        ConfidentLearningOptions(frac_noise=0)
