"""CIFAR-100, Caltech-256, 20 Newsgroups and IMDB from their bundles, on the real files.

The vote categories are counted here straight from the raw JSON with a Counter (a different
route from the builder: no vocabulary, no corrected_categories), and the published figures
of MANIFEST.md and of Northcutt et al. (2021) are asserted as well."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from workers.scoring.bundles import (
    BundleData,
    compile_bundle,
    label_set_identity,
    read_bundle,
)

NEW = ("cifar100", "caltech256", "20news", "imdb")
# MANIFEST.md: examples and flagged (human-validated) examples of each.
SIZES = {"cifar100": (10_000, 100), "caltech256": (29_780, 256), "20news": (7_532, 20),
         "imdb": (25_000, 2)}
FLAGGED = {"cifar100": 2_235, "caltech256": 2_360, "20news": 93, "imdb": 1_310}
# Northcutt et al. 2021: non-errors and validated label errors (the flagged examples the
# workers did not confirm) of each test set.
PUBLISHED = {"cifar100": (1_650, 585), "caltech256": (1_902, 458), "20news": (11, 82),
             "imdb": (585, 725)}
# What the independent count below finds at thresholds 3, 4, 5: (non-error, correctable,
# multi-label, neither, non-agreement); pinned so that a change in the files shows.
COUNTS = {
    "cifar100": {3: (1650, 318, 20, 37, 210), 4: (1650, 158, 6, 6, 415), 5: (1650, 48, 0, 0, 537)},
    "caltech256": {3: (1902, 221, 115, 23, 99), 4: (1902, 118, 46, 4, 290),
                   5: (1902, 41, 12, 2, 403)},
    "20news": {3: (11, 22, 12, 5, 43), 4: (11, 8, 0, 1, 73), 5: (11, 1, 0, 0, 81)},
    "imdb": {3: (585, 173, 0, 0, 552), 4: (585, 63, 0, 0, 662), 5: (585, 12, 0, 0, 713)},
}
ORDER = ("non_error", "correctable", "multi_label", "neither", "non_agreement")
# The answers that name a label other than the original one, by each file's own keys;
# IMDB's `neutral` and `off-topic` name none.
LABELLED_ANSWERS = {"guessed": "correctable", "both": "multi_label", "neither": "neither"}


def bundle_path(slug: str) -> Path:
    return PROJECT_ROOT / "benchmarks" / f"{slug}.toml"


def raw_votes(data_dir: Path, slug: str) -> list[dict[str, Any]]:
    return json.loads((data_dir / slug / "cleanlab_mturk.json").read_text())


def example_index(data_dir: Path, slug: str) -> dict[Any, int]:
    """Vote id -> example index. IMDB's ids are `test/<file name without .txt>`, looked up in
    the index-to-name list (names listed more than once are left out: none is voted on)."""
    if slug != "imdb":
        return {i: i for i in range(SIZES[slug][0])}
    names = json.loads((data_dir / "imdb/cleanlab_index_to_filename.json").read_text())
    repeated = {n for n, k in Counter(names).items() if k > 1}
    return {"test/" + n.removesuffix(".txt"): i for i, n in enumerate(names) if n not in repeated}


def independent_categories(record: dict[str, Any], threshold: int) -> str:
    votes = record["mturk"]
    assert sum(votes.values()) == 5  # five workers: at most one answer reaches 3 or more
    if votes["given"] >= 3:
        return "non_error"
    reached = [LABELLED_ANSWERS[a] for a, n in votes.items()
               if a in LABELLED_ANSWERS and n >= threshold]
    return reached[0] if reached else "non_agreement"


@pytest.fixture(scope="module")
def compiled(data_dir: Path) -> dict[str, dict[str, Any]]:
    return {slug: compile_bundle(read_bundle(bundle_path(slug)), data_dir=data_dir)
            for slug in NEW}


@pytest.mark.slow
@pytest.mark.parametrize("slug", NEW)
@pytest.mark.parametrize("threshold", [3, 4, 5])
def test_it_counts_the_vote_categories_as_an_independent_count_of_the_vote_file(
    slug: str, threshold: int, data_dir: Path, compiled: dict[str, dict[str, Any]]
) -> None:
    records = raw_votes(data_dir, slug)
    counted = Counter(independent_categories(r, threshold) for r in records)
    expected = tuple(counted[c] for c in ORDER)
    assert expected == COUNTS[slug][threshold]
    ls_slug = "corrected" if threshold == 3 else f"corrected-t{threshold}"
    meta = compiled[slug][ls_slug].meta
    assert tuple(meta["counts"][c] for c in ORDER) == expected
    assert (meta["threshold"], meta["flagged"]) == (threshold, len(records))


@pytest.mark.slow
@pytest.mark.parametrize("slug", NEW)
def test_it_matches_the_published_sizes_and_validated_errors(
    slug: str, data_dir: Path, compiled: dict[str, dict[str, Any]]
) -> None:
    size, num_classes = SIZES[slug]
    corrected = compiled[slug]["corrected"]
    assert (corrected.size, corrected.num_classes) == (size, num_classes)
    assert corrected.meta["flagged"] == FLAGGED[slug]
    non_errors = corrected.meta["counts"]["non_error"]
    assert (non_errors, FLAGGED[slug] - non_errors) == PUBLISHED[slug]


@pytest.mark.slow
@pytest.mark.parametrize("slug", NEW)
def test_it_relabels_the_correctable_examples_and_prunes_the_unknown_ones(
    slug: str, data_dir: Path, compiled: dict[str, dict[str, Any]]
) -> None:
    original = np.load(data_dir / slug / "original_labels.npy").tolist()
    index = example_index(data_dir, slug)
    label_of = {"Negative": 0, "Positive": 1}
    corrected_labels = list(original)
    unknown = set()
    for record in raw_votes(data_dir, slug):
        i = index[record["id"]]
        given = label_of.get(record["given_original_label"], record["given_original_label"])
        assert given == original[i]
        category = independent_categories(record, 3)
        if category == "correctable":
            guessed = record["our_guessed_label"]
            corrected_labels[i] = label_of.get(guessed, guessed)
        elif category != "non_error":
            unknown.add(i)
    arrays = compiled[slug]["corrected"].arrays
    assert arrays["labels"].tolist() == original
    assert arrays["corrected_labels"].tolist() == corrected_labels
    assert set(np.flatnonzero(~arrays["pruned"]).tolist()) == unknown
    assert compiled[slug]["original"].arrays["labels"].tolist() == original


def test_it_declares_original_and_three_corrected_label_sets_for_each() -> None:
    facts = {}
    for slug in NEW:
        bundle = read_bundle(bundle_path(slug))
        facts[slug] = [(ls.slug, *(label_set_identity(bundle, ls)[key] for key in
                                   ("kind", "family")), ls.fields.params().get("threshold"))
                       for ls in bundle.label_sets]
        assert [s.size for s in bundle.example_sets] == [SIZES[slug][0]]
        assert bundle.classes.count == SIZES[slug][1]
    assert set(map(tuple, facts.values())) == {(
        ("original", "single", "original", None), ("corrected", "single", "corrected", 3),
        ("corrected-t4", "single", "corrected", 4), ("corrected-t5", "single", "corrected", 5))}


@pytest.mark.slow
def test_it_names_the_classes_from_folder_names_vote_fields_and_the_manifest(
    data_dir: Path
) -> None:
    def names(slug: str) -> tuple[str, ...]:
        return BundleData(read_bundle(bundle_path(slug)), data_dir=data_dir).classes.names

    folders = sorted({p.split("/")[0] for p in json.loads(
        (data_dir / "caltech256/cleanlab_index_to_filename.json").read_text())})
    assert names("caltech256") == tuple(f.split(".", 1)[1] for f in folders)
    assert names("caltech256")[:2] == ("ak47", "american-flag")
    assert names("caltech256")[-1] == "toad"
    by_id = {}
    for record in raw_votes(data_dir, "cifar100"):
        by_id[record["our_guessed_label"]] = record["our_guessed_label_name"]
        by_id[record["given_original_label"]] = record["given_original_label_name"]
    assert names("cifar100") == tuple(by_id[i] for i in range(100))
    assert names("cifar100")[:3] == ("apple", "aquarium_fish", "baby")
    assert names("20news")[0] == "alt.atheism" and names("20news")[19] == "talk.religion.misc"
    assert names("imdb") == ("Negative", "Positive")
