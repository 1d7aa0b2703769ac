"""Validated errors from the real human-validation files, and precision/recall of flags."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.workers.scoring.support import mturk_records
from workers.audits import (
    load_validated_errors,
    precision_recall,
    run_confident_learning,
    validated_errors,
)


def _plain_loop(path: Path, *, one_based: bool) -> tuple[set[int], set[int]]:
    """(errors, checked) straight from the JSON: an error is any example fewer than 3 of
    the 5 workers kept the given label of (every category but non-error, docs/metrics.md §3)."""
    with open(path, encoding="utf-8") as handle:
        entries = json.load(handle)
    errors, checked = set(), set()
    for entry in entries:
        index = entry["id"] - 1 if one_based else entry["id"]
        checked.add(index)
        if entry["mturk"].get("given", 0) < 3:
            errors.add(index)
    return errors, checked


def test_it_counts_the_validated_mnist_errors(data_dir: Path, mnist_labels: np.ndarray) -> None:
    errors, checked = _plain_loop(data_dir / "mnist/cleanlab_mturk.json", one_based=False)
    result = load_validated_errors(data_dir, "mnist")
    assert len(result.errors) == len(errors) == 15
    assert len(result.checked) == len(checked) == 100
    assert result.errors == errors and result.checked == checked
    assert result.counts() == {"non_error": 85, "correctable": 10, "neither": 3, "non_agreement": 2}
    # MNIST ids are 0-based test indices: the file's given label is the label at that index
    with open(data_dir / "mnist/cleanlab_mturk.json", encoding="utf-8") as handle:
        entries = json.load(handle)
    assert all(mnist_labels[e["id"]] == e["given_original_label"] for e in entries)


def test_it_reads_imagenet_ids_as_one_based_file_numbers(data_dir: Path) -> None:
    errors, checked = _plain_loop(data_dir / "imagenet/cleanlab_mturk.json", one_based=True)
    result = load_validated_errors(data_dir, "imagenet")
    assert result.errors == errors and result.checked == checked
    assert (len(result.errors), len(result.checked)) == (2916, 5440)
    assert min(result.checked) == 0  # ILSVRC2012_val_00000001.JPEG is index 0


def test_it_counts_the_validated_cifar10_errors(data_dir: Path) -> None:
    errors, checked = _plain_loop(data_dir / "cifar10/cleanlab_mturk.json", one_based=False)
    result = load_validated_errors(data_dir, "cifar10")
    assert result.errors == errors and (len(errors), len(checked)) == (54, 275)


def test_it_uses_the_threshold_only_to_split_errors(data_dir: Path) -> None:
    records = mturk_records(data_dir / "mnist/cleanlab_mturk.json", one_based=False)
    at3, at5 = validated_errors(records, threshold=3), validated_errors(records, threshold=5)
    # "non_error" depends on given >= 3 alone, so the error set does not move
    assert at3.errors == at5.errors
    assert at5.counts()["correctable"] <= at3.counts()["correctable"]
    with pytest.raises(ValueError, match="threshold must be 3, 4 or 5"):
        validated_errors(records, threshold=2)


def test_it_rejects_an_unknown_benchmark(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="no human validation file for 'svhn'"):
        load_validated_errors(data_dir, "svhn")


def test_it_computes_precision_and_recall_on_hand_made_sets() -> None:
    flagged = [1, 2, 3, 4, 5, 6, 7, 8]
    errors = {2, 4, 10, 12}
    checked = {2, 3, 4, 10, 12, 20}
    assert precision_recall(flagged, errors, checked) == {
        "flagged": 8,
        "validated_errors": 4,
        "true_positives": 2,
        "precision": 0.25,
        "recall": 0.5,
        "checked": 6,
        "flagged_checked": 3,
        "precision_checked": 2 / 3,
    }
    assert precision_recall(np.array([2, 2, 4]), errors) == {
        "flagged": 2,
        "validated_errors": 4,
        "true_positives": 2,
        "precision": 1.0,
        "recall": 0.5,
    }


def test_it_gives_none_where_a_ratio_is_undefined() -> None:
    result = precision_recall([], set(), set())
    assert result["precision"] is None
    assert result["recall"] is None
    assert result["precision_checked"] is None
    assert precision_recall([1], {2}, {2})["precision_checked"] is None


def test_it_requires_the_errors_to_be_checked() -> None:
    with pytest.raises(ValueError, match="every validated error must be among the checked"):
        precision_recall([1], {1, 2}, {1})


def test_it_scores_confident_learning_against_the_mnist_validations(
    data_dir: Path, mnist_labels: np.ndarray, mnist_probs: np.ndarray
) -> None:
    validated = load_validated_errors(data_dir, "mnist")
    flagged = run_confident_learning(mnist_labels, [mnist_probs]).flagged
    expected_hits = sum(1 for i in flagged.tolist() if i in validated.errors)
    result = precision_recall(flagged, validated.errors, validated.checked)
    assert result["true_positives"] == expected_hits == 7
    assert result["flagged_checked"] == 15  # every flag of this run was shown to humans
    assert result["precision"] == result["recall"] == 7 / 15
