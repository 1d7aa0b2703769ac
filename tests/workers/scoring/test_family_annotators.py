"""The `annotators` family (workers/scoring/families/annotators.py): a bundle in CIFAR-10N's
layout (one label file per annotator, as its `random_label1..3` arrays: int64, one class id
per example, in the test set's order), compiled, scored, and its expected figures counted
independently here with collections.Counter and scipy.stats."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from workers.scoring.bundles import BundleError, compile_bundle, read_bundle
from workers.scoring.predictions import Predictions
from workers.scoring.scorer import score_predictions

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck"]
SIZE = 40

MANIFEST = """\
schema = 1
slug = "tiny-10n"
name = "Tiny CIFAR-10N"
modality = "image"
files = "bundle"

[classes]
count = 10
source = "inline"
names = {names}

[[example_sets]]
slug = "tiny-test"
name = "Tiny test"
size = {size}

[[label_sets]]
slug = "original"
kind = "single"
name = "Original labels"
labels = "clean_label.npy"

[[label_sets]]
slug = "annotators"
kind = "annotators"
name = "Three annotators"
annotators = {annotators}
"""
ANNOTATORS = ["random_label1.npy", "random_label2.npy", "random_label3.npy"]


def _write(folder: Path, *, annotators: list[str] = ANNOTATORS,
           lengths: tuple[int, ...] = (SIZE, SIZE, SIZE)) -> tuple[Path, np.ndarray,
                                                                  np.ndarray]:
    """The bundle in `folder`; (manifest, clean labels, annotator labels [example, annotator]).
    Each annotator agrees with the clean label about 80% of the time (CIFAR-10N's random
    labels: 82-83%), with a seeded generator."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(10)
    clean = rng.integers(0, 10, SIZE)
    columns = []
    for length in lengths:
        noisy = np.where(rng.random(SIZE) < 0.8, clean, rng.integers(0, 10, SIZE))
        columns.append(noisy[:length])
    np.save(folder / "clean_label.npy", clean.astype(np.int64))
    for name, column in zip(ANNOTATORS, columns, strict=True):
        np.save(folder / name, column.astype(np.int64))
    text = MANIFEST.format(names=str(CLASSES).replace("'", '"'), size=SIZE,
                           annotators=str(annotators).replace("'", '"'))
    (folder / "tiny.toml").write_text(text)
    labels = np.stack(columns, axis=1) if len(set(lengths)) == 1 else np.empty(0)
    return folder / "tiny.toml", clean, labels


def _expected(labels: np.ndarray, top1: np.ndarray) -> dict[str, Any]:
    """Counted example by example: the plurality (every class of a tie), any annotator, and
    the mean share of annotators who gave the prediction with its t interval."""
    plurality = any_hit = 0
    shares = []
    for row, predicted in zip(labels.tolist(), top1.tolist(), strict=True):
        votes = Counter(row)
        most = max(votes.values())
        plurality += votes.get(predicted, 0) == most
        any_hit += predicted in votes
        shares.append(votes.get(predicted, 0) / len(row))
    mean = float(np.mean(shares))
    half = float(scipy_stats.t.ppf(0.975, SIZE - 1) * np.std(shares, ddof=1) / np.sqrt(SIZE))
    return {"plurality": plurality, "any": any_hit, "agreement": mean,
            "agreement_ci": (mean - half, mean + half)}


def _clopper_pearson(correct: int, total: int) -> tuple[float, float]:
    low = 0.0 if correct == 0 else float(scipy_stats.beta.ppf(0.025, correct, total - correct + 1))
    high = 1.0 if correct == total else float(scipy_stats.beta.ppf(0.975, correct + 1,
                                                                   total - correct))
    return low, high


def test_it_compiles_one_column_per_annotator_in_example_order(tmp_path: Path) -> None:
    manifest, _, labels = _write(tmp_path / "bundle")
    compiled = compile_bundle(read_bundle(manifest), data_dir=tmp_path)["annotators"]
    assert (compiled.family, compiled.kind, compiled.size) == ("annotators", "multi", SIZE)
    assert compiled.arrays["annotator_labels"].tolist() == labels.tolist()
    unanimous = sum(len(set(row)) == 1 for row in labels.tolist())
    assert compiled.meta == {"annotators": 3, "unanimous": unanimous}


def test_it_scores_the_plurality_and_agreement_with_any_annotator(tmp_path: Path) -> None:
    manifest, clean, labels = _write(tmp_path / "bundle")
    sets = compile_bundle(read_bundle(manifest), data_dir=tmp_path)
    # a model that predicts one annotator's label (a random one per example), and a class
    # off it on one example in five
    rng = np.random.default_rng(3)
    picked = labels[np.arange(SIZE), rng.integers(0, 3, SIZE)]
    top1 = np.where(rng.random(SIZE) < 0.8, picked, (picked + 1) % 10)
    scores = score_predictions({"tiny-test": Predictions(top1.reshape(-1, 1).astype(np.int32),
                                                         None, None, None)}, sets.values())
    record = scores.records["annotators"]
    expected = _expected(labels, top1)
    assert 0 < expected["plurality"] < expected["any"] < SIZE  # a sample that tells them apart
    assert (record["correct"], record["total"]) == (expected["plurality"], SIZE)
    assert record["accuracy"] == expected["plurality"] / SIZE
    low, high = _clopper_pearson(expected["plurality"], SIZE)
    assert record["ci_low"] == pytest.approx(low, rel=1e-9)
    assert record["ci_high"] == pytest.approx(high, rel=1e-9)
    any_annotator = record["any_annotator"]
    assert (any_annotator["correct"], any_annotator["total"]) == (expected["any"], SIZE)
    assert record["agreement"]["value"] == pytest.approx(expected["agreement"], rel=1e-12)
    assert (record["agreement"]["ci_low"], record["agreement"]["ci_high"]) == pytest.approx(
        expected["agreement_ci"], rel=1e-9)
    # the headline hits, example by example, are the plurality's
    assert int(scores.hits["annotators"].sum()) == expected["plurality"]


def test_it_counts_every_class_of_a_tie_as_the_plurality(tmp_path: Path) -> None:
    manifest, _, labels = _write(tmp_path / "bundle")
    sets = compile_bundle(read_bundle(manifest), data_dir=tmp_path)
    ties = [i for i, row in enumerate(labels.tolist()) if len(set(row)) == 3]
    assert ties, "the sample has examples where all three annotators differ"
    for column in range(3):  # predicting any one annotator's label is in the plurality there
        top1 = labels[:, column].astype(np.int32).reshape(-1, 1)
        scores = score_predictions({"tiny-test": Predictions(top1, None, None, None)},
                                   sets.values())
        assert scores.hits["annotators"][ties].all()
        assert scores.records["annotators"]["any_annotator"]["correct"] == SIZE


@pytest.mark.parametrize(("annotators", "lengths", "code", "field"), [
    (ANNOTATORS[:1], (SIZE,) * 3, "bad_value", "label_sets.annotators.annotators"),
    ([ANNOTATORS[0], ANNOTATORS[0]], (SIZE,) * 3, "bad_value",
     "label_sets.annotators.annotators"),
    (["../random_label1.npy", ANNOTATORS[1]], (SIZE,) * 3, "path_escapes",
     "label_sets.annotators.annotators[0]"),
    (ANNOTATORS, (SIZE, SIZE - 1, SIZE), "length_mismatch",
     "label_sets.annotators.annotators[1]"),
])
def test_it_refuses_a_bad_annotators_table_naming_the_field(
        tmp_path: Path, annotators: list[str], lengths: tuple[int, ...], code: str,
        field: str) -> None:
    manifest, _, _ = _write(tmp_path / "bundle", annotators=annotators, lengths=lengths)
    with pytest.raises(BundleError) as refused:
        compile_bundle(read_bundle(manifest), data_dir=tmp_path)
    assert (refused.value.code, refused.value.field) == (code, field)


def test_it_prints_the_plurality_in_the_score_command(
        run_score: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    manifest, clean, labels = _write(tmp_path / "bundle")
    predictions = tmp_path / "preds.npy"
    np.save(predictions, clean.astype(np.int64))
    result = run_score("--bundle", str(manifest), "--json", str(predictions))
    assert result.returncode == 0, result.stderr
    expected = _expected(labels, clean)
    record = json.loads(result.stdout)["scores"]["annotators"]
    assert (record["correct"], record["total"]) == (expected["plurality"], SIZE)
