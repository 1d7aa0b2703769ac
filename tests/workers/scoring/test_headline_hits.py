"""Tests for metrics.headline_hits: per evaluated example, whether the headline accuracy counts
it correct, for every label-set family, on real data. Each vector must hold exactly the
examples counted in the record's total, in index order, and sum to its `correct`; the
expected vectors are derived here from the raw files with plain Python."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.realdata import MODELS, PREDICTIONS_DIR, SUFFIX
from tests.workers.scoring.support import compile_builtin
from workers.scoring import datasets
from workers.scoring.label_set_builders import CompiledLabelSet, evaluated_mask
from workers.scoring.predictions import Predictions, parse_predictions
from workers.scoring.scorer import headline_hits, score_label_set, score_predictions

CIFAR10_SLUGS = ("original", "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6")
EXAMPLE_SET = {"original": "cifar10-test", "corrected": "cifar10-test", "cifar10h": "cifar10-test",
             "cifar10.1-v4": "cifar10.1-v4", "cifar10.1-v6": "cifar10.1-v6"}
FOLDER = {"cifar10-test": "original", "cifar10.1-v4": "v4", "cifar10.1-v6": "v6"}


def _ids(top1: np.ndarray) -> Predictions:
    return Predictions(np.asarray(top1, dtype=np.int32).reshape(-1, 1), None, None, None)


def _assert_consistent(ls: CompiledLabelSet, hits: np.ndarray, record: dict[str, Any]) -> None:
    assert hits.dtype == bool
    assert hits.shape == (record["total"],) == (int(evaluated_mask(ls).sum()),)
    assert int(hits.sum()) == record["correct"]


def _top1(model: str, example_set: str) -> np.ndarray:
    path = PREDICTIONS_DIR / f"{FOLDER[example_set]}_predictions" / f"{model}{SUFFIX}"
    return np.array(json.loads(path.read_text()), dtype=np.int64)


@pytest.mark.parametrize("model", MODELS[::6])
def test_it_gives_every_cifar10_label_set_hits_that_sum_to_correct(
        model: str, data_dir: Path, compiled: Callable[[str, str], CompiledLabelSet]) -> None:
    sets = [compiled("cifar10", slug) for slug in CIFAR10_SLUGS]
    preds = {s: _ids(_top1(model, s)) for s in FOLDER}
    scores = score_predictions(preds, sets)
    assert sorted(scores.hits) == sorted(CIFAR10_SLUGS)
    for ls in sets:
        _assert_consistent(ls, scores.hits[ls.slug], scores.records[ls.slug])
        assert np.array_equal(scores.hits[ls.slug], headline_hits(ls, preds[ls.example_set]))
    # original and the new test sets (family new_test_set): every example, in order
    for slug, labels_file in (("original", "original_labels.npy"),
                              ("cifar10.1-v4", "cifar10.1_v4_labels.npy"),
                              ("cifar10.1-v6", "cifar10.1_v6_labels.npy")):
        labels = np.load(data_dir / "cifar10" / labels_file)
        expected = [int(p) == int(t) for p, t in zip(_top1(model, EXAMPLE_SET[slug]), labels,
                                                      strict=True)]
        assert scores.hits[slug].tolist() == expected
    # corrected: the pruned set P only (the unknown set U left out), by the vote rules
    original = np.load(data_dir / "cifar10/original_labels.npy")
    top1 = _top1(model, "cifar10-test")
    guessed, unknown = {}, set()
    for entry in json.loads((data_dir / "cifar10/cleanlab_mturk.json").read_text()):
        votes = entry["mturk"]
        if votes.get("given", 0) >= 3:
            continue
        if votes.get("guessed", 0) >= 3:
            guessed[entry["id"]] = entry["our_guessed_label"]
        else:
            unknown.add(entry["id"])
    expected = [int(top1[i]) == guessed.get(i, int(original[i]))
                for i in range(10_000) if i not in unknown]
    assert scores.hits["corrected"].tolist() == expected


def test_it_counts_cifar10h_plurality_hits_from_real_probabilities(
        data_dir: Path, compiled: Callable[[str, str], CompiledLabelSet]) -> None:
    path = data_dir / "cifar10/cleanlab_cv_probabilities.npy"
    preds = parse_predictions(path, num_examples=10_000, num_classes=10, keep_scores=True)
    ls = compiled("cifar10", "cifar10h")
    record, _ = score_label_set(ls, preds)
    hits = headline_hits(ls, preds)
    _assert_consistent(ls, hits, record)
    human = np.load(data_dir / "cifar10/cifar10h_probs.npy").astype(np.float64)
    top1 = np.load(path).argmax(axis=1)
    assert hits.tolist() == [human[i, top1[i]] == max(human[i]) for i in range(10_000)]


@pytest.fixture(scope="module")
def resnet50(data_dir: Path) -> np.ndarray:
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    return datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab).astype(np.int64)


@pytest.mark.parametrize("slug", ["original", "corrected", "corrected-t4", "corrected-t5", "real"])
def test_it_gives_imagenet_hits_that_sum_to_correct(
        slug: str, resnet50: np.ndarray, compiled: Callable[[str, str], CompiledLabelSet]
) -> None:
    ls = compiled("imagenet", slug)
    record, _ = score_label_set(ls, _ids(resnet50))
    _assert_consistent(ls, headline_hits(ls, _ids(resnet50)), record)


def test_it_counts_real_hits_on_images_with_a_real_list_in_order(
        data_dir: Path, resnet50: np.ndarray,
        compiled: Callable[[str, str], CompiledLabelSet]) -> None:
    real = json.loads((data_dir / "imagenet/real.json").read_text())
    expected = [int(resnet50[i]) in accepted for i, accepted in enumerate(real) if accepted]
    hits = headline_hits(compiled("imagenet", "real"), _ids(resnet50))
    assert hits.tolist() == expected
    assert len(expected) == 50_000 - 3_163


def test_it_counts_multilabel_and_imagenet_m_hits_in_order(
        data_dir: Path, tmp_path: Path, resnet50: np.ndarray) -> None:
    """A small file in the human_accuracy_v3.0.0.json layout, scored with the real ResNet-50."""
    wnid = [c["wnid"] for c in json.loads((data_dir / "imagenet/class_info.json").read_text())]
    annots: dict[str, Any] = {}
    accepted: dict[int, set[int]] = {}
    for i in range(40):
        right, other = int(resnet50[i]), (int(resnet50[i]) + 1) % 1000
        lists = [{"correct": [wnid[right]]}, {"unclear": [wnid[right]]},
                 {"correct": [wnid[other]], "wrong": [wnid[right]]},
                 {"correct": [wnid[other]]}][i % 4]
        annots[datasets.imagenet_file_name(i)] = lists
        accepted[i] = {wnid.index(w) for w in lists.get("correct", []) + lists.get("unclear", [])}
    problematic = {5, 17}
    listed = [1, 2, 3, 8, 30, 31]
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps({
        "initial_annots": annots,
        "problematic_images": {datasets.imagenet_file_name(i): {} for i in problematic},
        "imagenet_m": [datasets.imagenet_file_name(i) for i in listed]}))
    for slug, included in (("multilabel", [i for i in range(40) if i not in problematic]),
                           ("imagenet-m", listed)):
        ls = compile_builtin("imagenet", slug, data_dir=data_dir, multilabel_file=path)
        record, _ = score_label_set(ls, _ids(resnet50))
        hits = headline_hits(ls, _ids(resnet50))
        _assert_consistent(ls, hits, record)
        assert hits.tolist() == [int(resnet50[i]) in accepted[i] for i in included]
        assert 0 < int(hits.sum()) < len(included)


def test_it_refuses_hits_for_the_wrong_number_of_examples(
        compiled: Callable[[str, str], CompiledLabelSet]) -> None:
    with pytest.raises(ValueError, match="9 predictions for 10000 examples"):
        headline_hits(compiled("cifar10", "original"), _ids(np.zeros(9, dtype=np.int64)))
