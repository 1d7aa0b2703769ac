"""Figures of the four further test sets of the label-error study (CIFAR-100, Caltech-256,
20 Newsgroups, IMDB; benchmarks/*.toml), worked out here straight from the data files, for
the server tests to compare with what the pages and the API show.

The vote categories are found by a route of their own: sets of example indices, one per
answer that reached the threshold, taken apart by set difference, with each file's vote keys
mapped here by hand (the builder sums votes per meaning through the bundle's vocabulary and
classifies record by record; tests/workers/scoring/bundles/test_new_benchmarks.py counts the
raw JSON with a Counter).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

STUDY = ("cifar100", "caltech256", "20news", "imdb")
CORRECTED = {3: "corrected", 4: "corrected-t4", 5: "corrected-t5"}  # threshold -> label set
DEMO_MODEL = {"cifar100": "cleanlab cross-validated (CIFAR-100)",
              "caltech256": "cleanlab cross-validated (Caltech-256)",
              "20news": "cleanlab cross-validated (20 Newsgroups)",
              "imdb": "cleanlab cross-validated (IMDB)"}
# What each answer of the vote files says. IMDB's `neutral` and `off-topic` name no label.
ANSWER = {"given": "given", "guessed": "guessed", "both": "both", "neither": "neither",
          "neutral": None, "off-topic": None}
IMDB_CLASSES = ("Negative", "Positive")
# docs/bundles.md §9 at threshold 3 (flagged, non-error, correctable, multi-label, neither,
# non-agreement, |P|); the errors (all but the non-errors: 585, 458, 82, 725) are Northcutt
# et al. 2021's published label errors of these test sets (Table 2, "validated errors"; the
# other three built-in benchmarks too).
PUBLISHED_T3 = {
    "cifar100": (2_235, 1_650, 318, 20, 37, 210, 9_733),
    "caltech256": (2_360, 1_902, 221, 115, 23, 99, 29_543),
    "20news": (93, 11, 22, 12, 5, 43, 7_472),
    "imdb": (1_310, 585, 173, 0, 0, 552, 24_448),
}
PUBLISHED_ERRORS = {"cifar100": 585, "caltech256": 458, "20news": 82, "imdb": 725,
                    "mnist": 15, "cifar10": 54, "imagenet": 2916}


@dataclass(frozen=True)
class Categories:
    """The flagged examples of one vote file at one threshold, as sets of indices."""

    size: int  # examples of the test set
    flagged: frozenset[int]
    non_error: frozenset[int]
    correctable: frozenset[int]
    multi_label: frozenset[int]
    neither: frozenset[int]
    non_agreement: frozenset[int]
    guessed: dict[int, int]  # example -> the guessed class id

    @property
    def unknown(self) -> frozenset[int]:
        return self.multi_label | self.neither | self.non_agreement

    def facts(self) -> dict[str, int]:
        """The about page's counts (leaderboard/presentation/about/texts.py keys)."""
        return {"flagged": len(self.flagged), "non_error": len(self.non_error),
                "correctable": len(self.correctable), "multi_label": len(self.multi_label),
                "neither": len(self.neither), "non_agreement": len(self.non_agreement),
                "unknown": len(self.unknown), "pruned": self.size - len(self.unknown)}


def original_labels(data_dir: Path, slug: str) -> np.ndarray:
    return np.load(data_dir / slug / "original_labels.npy").astype(np.int64)


def example_of(data_dir: Path, slug: str) -> dict[Any, int]:
    """Vote id -> example index: the index itself, or for IMDB the one entry of the
    index-to-name list named `<id without test/>.txt`."""
    if slug != "imdb":
        return {}
    names = json.loads((data_dir / "imdb/cleanlab_index_to_filename.json").read_text())
    where: dict[str, list[int]] = defaultdict(list)
    for index, name in enumerate(names):
        where[f"test/{name[:-len('.txt')]}"].append(index)
    return {name: indices[0] for name, indices in where.items() if len(indices) == 1}


def categories(data_dir: Path, slug: str, threshold: int) -> Categories:
    records = json.loads((data_dir / slug / "cleanlab_mturk.json").read_text())
    labels = original_labels(data_dir, slug)
    index_of = example_of(data_dir, slug)
    reached: dict[str | None, set[int]] = defaultdict(set)  # answer -> examples it won
    kept: set[int] = set()
    guessed: dict[int, int] = {}
    for record in records:
        index = index_of[record["id"]] if index_of else int(record["id"])
        given, guess = record["given_original_label"], record["our_guessed_label"]
        if slug == "imdb":
            given, guess = IMDB_CLASSES.index(given), IMDB_CLASSES.index(guess)
        assert given == labels[index], (slug, record["id"])
        guessed[index] = int(guess)
        totals: dict[str | None, int] = defaultdict(int)
        for key, votes in record["mturk"].items():
            totals[ANSWER[key]] += votes
        if totals["given"] >= 3:
            kept.add(index)
        for answer in ("guessed", "both", "neither"):
            if totals[answer] >= threshold:
                reached[answer].add(index)
    flagged = frozenset(guessed)
    assert len(flagged) == len(records)  # no example voted on twice
    correctable = reached["guessed"] - kept
    multi = reached["both"] - kept - correctable
    neither = reached["neither"] - kept - correctable - multi
    return Categories(
        size=int(labels.size), flagged=flagged, non_error=frozenset(kept),
        correctable=frozenset(correctable), multi_label=frozenset(multi),
        neither=frozenset(neither),
        non_agreement=flagged - kept - correctable - multi - neither,
        guessed={i: guessed[i] for i in correctable})


def demo_top1(data_dir: Path, slug: str) -> np.ndarray:
    """The demo submission's top-1: the argmax of cleanlab's probabilities where the data has
    them, else its predicted labels."""
    probabilities = data_dir / slug / "cleanlab_cv_probabilities.npy"
    if probabilities.is_file():
        return np.load(probabilities).argmax(axis=1)
    return np.load(data_dir / slug / "cleanlab_cv_predicted_labels.npy").astype(np.int64)


def demo_counts(data_dir: Path, slug: str) -> dict[str, tuple[int, int]]:
    """Label set -> (correct, total) of the demo submission: original over every example,
    each corrected set over the pruned set P with the correctable examples relabelled."""
    top1, labels = demo_top1(data_dir, slug), original_labels(data_dir, slug)
    out = {"original": (int((top1 == labels).sum()), int(labels.size))}
    for threshold, label_set in CORRECTED.items():
        found = categories(data_dir, slug, threshold)
        unknown = found.unknown
        correct = total = 0
        for index in range(labels.size):
            if index in unknown:
                continue
            total += 1
            correct += int(top1[index] == found.guessed.get(index, labels[index]))
        out[label_set] = (correct, total)
    return out
