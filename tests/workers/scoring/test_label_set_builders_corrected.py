"""Tests for the corrected label sets (docs/metrics.md §3) and their vote rules."""

# Expected values on the real data are derived here with plain Python loops over the public
# files; the only numbers taken from outside are the published counts of Northcutt et al. 2021.

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.support import SIZES, Compiled, load_json, mturk_records
from workers.scoring.bundles import BundleData, builtin_bundle
from workers.scoring.datasets import DataError, MturkRecord
from workers.scoring.families.registry import family_named
from workers.scoring.label_set_builders import (
    build_corrected,
    corrected_categories,
    evaluated_mask,
)

VOTE_FILES = {  # vote file, and whether its ids are 1-based file numbers
    "imagenet": ("imagenet/cleanlab_mturk.json", True),
    "cifar10": ("cifar10/cleanlab_mturk.json", False),
    "mnist": ("mnist/cleanlab_mturk.json", False),
}
CATALOG_CORRECTED = {("imagenet", 3): "corrected", ("imagenet", 4): "corrected-t4",
                     ("imagenet", 5): "corrected-t5", ("cifar10", 3): "corrected",
                     ("mnist", 3): "corrected"}
CATEGORIES = ("non_error", "correctable", "multi_label", "neither", "non_agreement")
UNKNOWN = {"multi_label", "neither", "non_agreement"}

# Northcutt et al. 2021, label-error categories at agreement threshold 3:
# (non-errors, correctable, multi-label, neither, non-agreement)
PUBLISHED_COUNTS = {
    "imagenet": (2524, 1428, 597, 293, 598),
    "cifar10": (221, 18, 0, 4, 32),
    "mnist": (85, 10, 0, 3, 2),
}


# ---------------------------------------------------------------- corrected (docs/metrics.md §3)


def categorize(votes: dict[str, int], threshold: int) -> str:
    """docs/metrics.md §3, written as an ordered rule list: the first rule whose vote count is
    reached."""
    rules = [("given", 3, "non_error"), ("guessed", threshold, "correctable"),
             ("both", threshold, "multi_label"), ("neither", threshold, "neither")]
    for key, needed, category in rules:
        if votes.get(key, 0) >= needed:
            return category
    return "non_agreement"


def corrected_set(compiled: Compiled, data_dir: Path, bench: str,
                  threshold: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The built-in bundle's set where there is one; otherwise its `corrected` label set read at
    another threshold, built by its family."""
    slug = CATALOG_CORRECTED.get((bench, threshold))
    if slug is not None:
        labelset = compiled(bench, slug)
        return dict(labelset.arrays), dict(labelset.meta)
    bundle = builtin_bundle(bench)
    declared = bundle.label_set("corrected")
    ls = dataclasses.replace(declared, fields=dataclasses.replace(declared.fields,
                                                                  threshold=threshold))
    return family_named("corrected").build(BundleData(bundle, data_dir=data_dir), ls)


@pytest.mark.parametrize("threshold", [3, 4, 5])
@pytest.mark.parametrize("bench", ["imagenet", "cifar10", "mnist"])
def test_it_builds_corrected_labels_by_the_spec_rules(
    compiled: Compiled, data_dir: Path, originals: dict[str, list[int]], bench: str,
    threshold: int
) -> None:
    vote_file, one_based = VOTE_FILES[bench]
    entries = load_json(data_dir / vote_file)
    n = SIZES[bench]
    category: dict[int, str] = {}
    guessed: dict[int, int] = {}
    for entry in entries:
        index = entry["id"] - 1 if one_based else entry["id"]
        category[index] = categorize(entry["mturk"], threshold)
        guessed[index] = entry["our_guessed_label"]
    unknown = {i for i, c in category.items() if c in UNKNOWN}
    correctable = {i for i, c in category.items() if c == "correctable"}
    counts = Counter(category.values())
    expected_counts = {c: counts.get(c, 0) for c in CATEGORIES}
    expected_corrected = [guessed[i] if i in correctable else label
                          for i, label in enumerate(originals[bench])]

    arrays, meta = corrected_set(compiled, data_dir, bench, threshold)

    assert len(category) == len(entries)  # ids are unique
    assert meta == {"threshold": threshold, "flagged": len(entries), "counts": expected_counts,
                    "pruned_size": n - len(unknown), "correctable_size": len(correctable)}
    assert arrays["labels"].tolist() == originals[bench]
    assert arrays["corrected_labels"].tolist() == expected_corrected
    assert set(np.flatnonzero(~arrays["pruned"]).tolist()) == unknown
    assert int(arrays["pruned"].sum()) == n - len(unknown)
    assert set(np.flatnonzero(arrays["correctable"]).tolist()) == correctable
    assert arrays["pruned"].shape == arrays["correctable"].shape == (n,)


@pytest.mark.parametrize("bench", ["imagenet", "cifar10", "mnist"])
def test_it_reproduces_the_published_label_error_counts(
    compiled: Compiled, data_dir: Path, bench: str
) -> None:
    entries = load_json(data_dir / VOTE_FILES[bench][0])
    derived = Counter(categorize(e["mturk"], 3) for e in entries)
    published = dict(zip(CATEGORIES, PUBLISHED_COUNTS[bench], strict=True))
    assert {c: derived.get(c, 0) for c in CATEGORIES} == published
    assert compiled(bench, "corrected").meta["counts"] == published


def test_it_has_no_both_votes_in_the_mnist_file(data_dir: Path) -> None:
    entries = load_json(data_dir / "mnist/cleanlab_mturk.json")
    assert {key for e in entries for key in e["mturk"]} == {"given", "guessed", "neither"}


@pytest.mark.parametrize(
    ("votes", "threshold", "category"),
    [
        ({"given": 5, "guessed": 0, "neither": 0, "both": 0}, 3, "non_error"),
        ({"given": 3, "guessed": 2}, 3, "non_error"),
        ({"given": 3, "guessed": 2}, 5, "non_error"),  # given always needs 3, whatever t
        ({"given": 2, "guessed": 3}, 3, "correctable"),
        ({"given": 2, "guessed": 3}, 4, "non_agreement"),
        ({"given": 1, "guessed": 4}, 4, "correctable"),
        ({"guessed": 5}, 5, "correctable"),
        ({"given": 1, "guessed": 4}, 5, "non_agreement"),
        ({"guessed": 2, "both": 3}, 3, "multi_label"),
        ({"given": 1, "both": 4}, 4, "multi_label"),
        ({"given": 1, "both": 4}, 5, "non_agreement"),
        ({"given": 2, "neither": 3}, 3, "neither"),
        ({"neither": 5}, 5, "neither"),
        ({"given": 1, "guessed": 1, "neither": 3}, 3, "neither"),  # MNIST: no "both" key
        ({"given": 2, "guessed": 2, "neither": 1}, 3, "non_agreement"),
        ({"given": 1, "guessed": 2, "both": 2}, 3, "non_agreement"),
        ({}, 3, "non_agreement"),
        ({"given": 0, "guessed": 0, "neither": 0, "both": 0}, 3, "non_agreement"),
    ],
)
def test_it_categorizes_one_vote_record(votes: dict[str, int], threshold: int,
                                        category: str) -> None:
    assert corrected_categories(votes, threshold) == category


def test_it_builds_a_hand_made_corrected_set() -> None:
    original = np.array([0, 1, 2, 3, 4, 5], dtype=np.int16)
    records = [
        MturkRecord(0, 0, 9, {"given": 4, "guessed": 1}),  # non-error
        MturkRecord(1, 1, 7, {"given": 1, "guessed": 4}),  # correctable -> 7
        MturkRecord(2, 2, 8, {"both": 3, "guessed": 2}),  # multi-label
        MturkRecord(3, 3, 8, {"neither": 3, "given": 2}),  # neither
        MturkRecord(4, 4, 8, {"given": 2, "guessed": 2, "neither": 1}),  # non-agreement
    ]  # example 5 is not flagged
    arrays, meta = build_corrected(original, records, 3)
    assert arrays["labels"].tolist() == [0, 1, 2, 3, 4, 5]
    assert arrays["corrected_labels"].tolist() == [0, 7, 2, 3, 4, 5]
    assert arrays["pruned"].tolist() == [True, True, False, False, False, True]
    assert arrays["correctable"].tolist() == [False, True, False, False, False, False]
    assert meta == {"threshold": 3, "flagged": 5,
                    "counts": {"non_error": 1, "correctable": 1, "multi_label": 1, "neither": 1,
                               "non_agreement": 1},
                    "pruned_size": 3, "correctable_size": 1}
    assert original.tolist() == [0, 1, 2, 3, 4, 5]  # the input is not modified


def test_it_rejects_a_vote_file_that_disagrees_with_the_original_labels() -> None:
    original = np.array([0, 1, 2], dtype=np.int16)
    records = [MturkRecord(0, 0, 1, {"given": 5}), MturkRecord(2, 1, 0, {"guessed": 5})]
    with pytest.raises(DataError) as excinfo:
        build_corrected(original, records, 3)
    assert str(excinfo.value) == ("vote file disagrees with the original label of example 2: "
                                  "1 vs 2 (misaligned order?)")


@pytest.mark.parametrize("threshold", [2, 6])
def test_it_rejects_an_agreement_threshold_outside_3_to_5(threshold: int) -> None:
    with pytest.raises(ValueError) as excinfo:
        build_corrected(np.array([0, 1], dtype=np.int16), [], threshold)
    assert str(excinfo.value) == f"agreement threshold must be 3, 4 or 5, got {threshold}"


def test_it_rejects_a_misaligned_vote_file_on_real_data(
    data_dir: Path, originals: dict[str, list[int]]
) -> None:
    # the ImageNet ids are 1-based: reading them as 0-based shifts every record by one image
    records = mturk_records(data_dir / "imagenet/cleanlab_mturk.json", one_based=False)
    labels = originals["imagenet"]
    first_bad = next(r for r in records if r.index >= 50_000 or labels[r.index] != r.given)
    assert first_bad.index < 50_000
    with pytest.raises(DataError) as excinfo:
        build_corrected(np.array(labels, dtype=np.int16), records, 3)
    assert str(excinfo.value) == (
        f"vote file disagrees with the original label of example {first_bad.index}: "
        f"{first_bad.given} vs {labels[first_bad.index]} (misaligned order?)")


def test_it_evaluates_the_pruned_set_of_a_corrected_set(
    compiled: Compiled, data_dir: Path
) -> None:
    entries = load_json(data_dir / "cifar10/cleanlab_mturk.json")
    unknown = {e["id"] for e in entries if categorize(e["mturk"], 3) in UNKNOWN}
    labelset = compiled("cifar10", "corrected")
    assert np.flatnonzero(~evaluated_mask(labelset)).tolist() == sorted(unknown)
    assert labelset.summary["evaluated"] == 10_000 - len(unknown)
    assert evaluated_mask(compiled("cifar10", "original")).tolist() == [True] * 10_000
