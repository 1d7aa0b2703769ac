"""Every metric of one submission, through its label sets' families (workers/scoring/families,
docs/metrics.md §2 to §8): the one place the server and `python -m workers.score` score.

Each family's `score` takes a compiled label set and the submission's predictions on that label
set's example set, and returns a JSON-able record whose headline fields are `accuracy, correct,
total, ci_low, ci_high` (the shape of `stats.accuracy_record`), plus the family's own figures;
the reviewable ones also return their novel (example, class) pairs. Leaderboard-wide figures
(ranks, the linear fit, curve crossings) live in `leaderboard.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .bundles import builtin_bundle, builtin_slugs
from .bundles.examples import ExampleNames
from .families.base import ExampleNamer, ScoreInputs
from .families.registry import family_named, reference_family
from .hits import NovelPairs, Record
from .label_set_builders import CompiledLabelSet
from .predictions import Predictions


@dataclass(frozen=True)
class SubmissionScores:
    records: dict[str, Record]  # label set slug -> record
    novel: dict[str, NovelPairs] = field(default_factory=dict)
    hits: dict[str, np.ndarray] = field(default_factory=dict)  # slug -> `headline_hits`


@lru_cache(maxsize=64)
def default_example_namer(example_set: str) -> ExampleNamer:
    """The names of an example set when the caller gives none: a built-in benchmark's example
    set is named as its bundle names it where that needs no file (ImageNet's file-number
    pattern: ILSVRC2012_val_00000001.JPEG), any other `<slug>[i]` (docs/bundles.md §4)."""
    for slug in builtin_slugs():
        for declared in builtin_bundle(slug).example_sets:
            if declared.slug == example_set and declared.naming != "file":
                return ExampleNames(declared, Path()).name
    return lambda index: f"{example_set}[{index}]"


def _check_size(ls: CompiledLabelSet, preds: Predictions) -> None:
    if preds.num_examples != ls.size:
        raise ValueError(
            f"{ls.example_set}: {preds.num_examples} predictions for {ls.size} examples")


def headline_hits(ls: CompiledLabelSet, preds: Predictions) -> np.ndarray:
    """Whether each evaluated example counts as correct in the headline accuracy: exactly the
    examples counted in the record's `total`, in the order of
    `label_set_builders.evaluated_mask(ls)`, so `hits.sum() == record["correct"]`. The paired
    tests between submissions (significance.py) compare these vectors."""
    _check_size(ls, preds)
    return family_named(ls.family).headline_hits(ls, preds)


def score_label_set(
    ls: CompiledLabelSet, preds: Predictions, *, class_names: tuple[str, ...] | None = None,
    example_name: ExampleNamer | None = None,
) -> tuple[Record, NovelPairs | None]:
    """The record (and novel pairs, for the reviewable families) of one label set.

    class_names (id order) and example_name (index -> name) are the benchmark's, for the
    records that list examples (a listed subset's misses); example_name defaults to
    `default_example_namer(ls.example_set)`."""
    _check_size(ls, preds)
    inputs = ScoreInputs(class_names, example_name or default_example_namer(ls.example_set))
    record, novel = family_named(ls.family).score(ls, preds, inputs)
    header = {
        "label_set": ls.slug,
        "image_set": ls.example_set,  # the record's key: stored, and in the API's scores
        "family": ls.family,
        "version_hash": ls.content_hash,
    }
    return {**header, **record}, novel


def score_predictions(
    predictions: Mapping[str, Predictions],
    label_sets: Iterable[CompiledLabelSet],
    *,
    class_names: tuple[str, ...] | None = None,
    example_names: Mapping[str, ExampleNamer] | None = None,
) -> SubmissionScores:
    """Score predictions (example set slug -> Predictions) on every label set they cover.

    example_names: example set slug -> its namer (`score_label_set`'s example_name); an example
    set it leaves out gets `default_example_namer`.

    A family with `gap_to_reference` (new test sets) also gets `gap` = the accuracy on the
    benchmark's reference label set (of the reference family, `original` on the built-in
    benchmarks) minus its own, when the submission has predictions on
    that label set's example set.
    """
    records: dict[str, Record] = {}
    novel: dict[str, NovelPairs] = {}
    hits: dict[str, np.ndarray] = {}
    for ls in label_sets:
        if ls.example_set not in predictions:
            continue
        record, pairs = score_label_set(
            ls, predictions[ls.example_set], class_names=class_names,
            example_name=(example_names or {}).get(ls.example_set))
        records[ls.slug] = record
        hits[ls.slug] = headline_hits(ls, predictions[ls.example_set])
        if pairs is not None:
            novel[ls.slug] = pairs
    # the reference label set is the one of the reference family, whatever its slug
    reference = reference_family().name
    reference_accuracy = next((r["accuracy"] for r in records.values()
                               if r["family"] == reference), None)
    for record in records.values():
        if family_named(record["family"]).gap_to_reference:
            new = record["accuracy"]
            record["gap"] = (None if reference_accuracy is None or new is None
                             else reference_accuracy - new)
    return SubmissionScores(records, novel, hits)
