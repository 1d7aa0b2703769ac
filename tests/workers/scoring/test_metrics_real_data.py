"""Tests for workers.scoring.scorer on real data: 30 CIFAR-10 models, ImageNet and CIFAR-10H."""

# Expectations are derived here from the raw public files with plain NumPy/Python (never copied
# from the code's output).

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.workers.scoring.realdata import MODELS, PREDICTIONS_DIR, SUFFIX
from tests.workers.scoring.support import Compiled
from tests.workers.scoring.support import assert_counts as _assert_counts
from tests.workers.scoring.support import ids as _ids
from workers.scoring import datasets
from workers.scoring.bundles import builtin_bundle
from workers.scoring.bundles.builders import optional_source
from workers.scoring.label_set_builders import CompiledLabelSet
from workers.scoring.predictions import Predictions, parse_predictions
from workers.scoring.scorer import score_predictions

# example set slug -> (prediction folder, label file) of the CIFAR-10 model predictions
CIFAR10_EXAMPLE_SETS = {
    "cifar10-test": ("original", "original_labels.npy"),
    "cifar10.1-v4": ("v4", "cifar10.1_v4_labels.npy"),
    "cifar10.1-v6": ("v6", "cifar10.1_v6_labels.npy"),
}
NEW_SET_OF_EXAMPLE_SET = {"cifar10-test": "original", "cifar10.1-v4": "cifar10.1-v4",
                        "cifar10.1-v6": "cifar10.1-v6"}


# ---------------------------------------------------------------- fixtures
# `data_dir` and `compiled` (built-in bundles' label sets, compiled once per session) come
# from tests/workers/scoring/conftest.py


def _compile(compiled: Compiled, benchmark: str,
             slugs: tuple[str, ...] | None) -> dict[str, CompiledLabelSet]:
    bundle = builtin_bundle(benchmark)
    return {ls.slug: compiled(benchmark, ls.slug) for ls in bundle.label_sets
            if not optional_source(bundle, ls) and (slugs is None or ls.slug in slugs)}


@pytest.fixture(scope="session")
def cifar10_sets(compiled: Compiled) -> dict[str, CompiledLabelSet]:
    return _compile(compiled, "cifar10", None)


@pytest.fixture(scope="session")
def imagenet_sets(compiled: Compiled) -> dict[str, CompiledLabelSet]:
    return _compile(compiled, "imagenet",
                    ("original", "corrected", "corrected-t4", "corrected-t5", "real"))


@pytest.fixture(scope="session")
def imagenet_raw(data_dir: Path) -> dict[str, object]:
    """The raw ImageNet files, put in canonical order by this test's own code."""
    paths = json.loads((data_dir / "imagenet/cleanlab_index_to_filepath.json").read_text())
    # 'val/<wnid>/ILSVRC2012_val_00000293.JPEG' -> canonical index 292
    perm = np.array([int(p[-13:-5]) - 1 for p in paths])
    original_cleanlab = np.load(data_dir / "imagenet/cleanlab_original_labels.npy").astype(np.int64)
    original = np.empty(50_000, dtype=np.int64)
    original[perm] = original_cleanlab
    rated: set[tuple[int, int]] = set()
    with np.load(data_dir / "imagenet/real_scores.npz") as z:
        for name, cls in z["info"].tolist():
            rated.add((int(name[len("ILSVRC2012_val_"):-len(".JPEG")]) - 1, int(cls)))
    return {
        "perm": perm,
        "original_cleanlab": original_cleanlab,
        "original": original,
        "real": json.loads((data_dir / "imagenet/real.json").read_text()),
        "rated": rated,
        "mturk": json.loads((data_dir / "imagenet/cleanlab_mturk.json").read_text()),
    }


def _corrected_reference(original: np.ndarray, mturk: list[dict], threshold: int,
                         one_based: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """docs/metrics.md §3 from the vote file: (corrected labels, pruned P, correctable C)."""
    corrected = original.copy()
    pruned = np.ones(original.size, dtype=bool)
    correctable = np.zeros(original.size, dtype=bool)
    for entry in mturk:
        i = entry["id"] - 1 if one_based else entry["id"]
        assert entry["given_original_label"] == original[i]  # the alignment of the vote file
        votes = entry["mturk"]
        if votes.get("given", 0) >= 3:
            continue  # non-error: kept with its original label
        if votes.get("guessed", 0) >= threshold:
            correctable[i] = True
            corrected[i] = entry["our_guessed_label"]
        else:  # multi-label, neither or non-agreement: all three are the unknown set U
            pruned[i] = False
    return corrected, pruned, correctable


def _count(hits: np.ndarray, where: np.ndarray) -> tuple[int, int]:
    return int(hits[where].sum()), int(where.sum())


# ---------------------------------------------------------------- CIFAR-10: 30 real models


def test_it_finds_thirty_cifar10_models_with_predictions_on_all_three_example_sets() -> None:
    assert len(MODELS) == 30
    for folder, _ in CIFAR10_EXAMPLE_SETS.values():
        names = sorted(p.name[: -len(SUFFIX)]
                       for p in (PREDICTIONS_DIR / f"{folder}_predictions").glob(f"*{SUFFIX}"))
        assert names == MODELS


def _model_predictions(model: str) -> dict[str, Predictions]:
    bench = builtin_bundle("cifar10")
    return {slug: parse_predictions(PREDICTIONS_DIR / f"{folder}_predictions/{model}{SUFFIX}",
                                    num_examples=bench.example_set(slug).size, num_classes=10)
            for slug, (folder, _) in CIFAR10_EXAMPLE_SETS.items()}


@pytest.mark.parametrize("model", MODELS)
def test_it_scores_each_cifar10_model_like_a_direct_comparison(
        model: str, data_dir: Path, cifar10_sets: dict[str, CompiledLabelSet]) -> None:
    scores = score_predictions(_model_predictions(model), cifar10_sets.values())
    accuracy = {}
    for example_set, (folder, label_file) in CIFAR10_EXAMPLE_SETS.items():
        labels = np.load(data_dir / "cifar10" / label_file)
        preds = np.array(json.loads(
            (PREDICTIONS_DIR / f"{folder}_predictions/{model}{SUFFIX}").read_text()))
        hits = preds == labels
        accuracy[example_set] = float(np.mean(hits))
        record = scores.records[NEW_SET_OF_EXAMPLE_SET[example_set]]
        assert record["accuracy"] == accuracy[example_set]
        assert (record["correct"], record["total"]) == (int(hits.sum()), labels.size)
        assert record["top5"] is None  # top-1 ids only
    for slug in ("cifar10.1-v4", "cifar10.1-v6"):
        assert scores.records[slug]["gap"] == accuracy["cifar10-test"] - accuracy[slug]
    assert "gap" not in scores.records["original"]
    assert scores.novel == {}


@pytest.mark.parametrize("model", MODELS)
def test_it_scores_each_cifar10_model_on_corrected_labels_by_the_vote_rules(
        model: str, data_dir: Path, cifar10_sets: dict[str, CompiledLabelSet]) -> None:
    original = np.load(data_dir / "cifar10/original_labels.npy").astype(np.int64)
    mturk = json.loads((data_dir / "cifar10/cleanlab_mturk.json").read_text())
    corrected, pruned, correctable = _corrected_reference(original, mturk, 3, one_based=False)
    top1 = np.array(json.loads(
        (PREDICTIONS_DIR / f"original_predictions/{model}{SUFFIX}").read_text()))
    record = score_predictions({"cifar10-test": _ids(top1)},
                              [cifar10_sets["corrected"]]).records["corrected"]
    _assert_counts(record, *_count(top1 == corrected, pruned))
    _assert_counts(record["correctable"]["acc1"], *_count(top1 == original, correctable))
    _assert_counts(record["correctable"]["cacc1"], *_count(top1 == corrected, correctable))
    _assert_counts(record["original_on_pruned"], *_count(top1 == original, pruned))


# ---------------------------------------------------------------- ImageNet: real data


def test_it_scores_the_original_imagenet_labels_on_real_by_a_direct_loop(
        data_dir: Path, imagenet_sets: dict[str, CompiledLabelSet],
        imagenet_raw: dict) -> None:
    original = datasets.imagenet_original_labels(data_dir)
    real = imagenet_raw["real"]
    included = correct = 0
    for i, accepted in enumerate(real):
        if accepted:
            included += 1
            correct += int(original[i]) in accepted
    scores = score_predictions({"imagenet-val": _ids(original)},
                              [imagenet_sets["original"], imagenet_sets["real"]])
    _assert_counts(scores.records["real"], correct, included)
    assert included == 50_000 - 3_163  # MANIFEST: 3,163 empty lists
    _assert_counts(scores.records["original"], 50_000, 50_000)
    # Every original label on an included image is judged: a rated image has its original
    # label among its rated pairs, and an unrated image had only its original label judged
    # (all models agreed with it), so no (image, original label) pair can be novel.
    assert scores.records["real"]["novel_count"] == 0
    assert len(scores.novel["real"]) == 0
    assert scores.records["real"]["second"] is None and scores.records["real"]["third"] is None


@pytest.fixture(scope="session")
def resnet50_top1(data_dir: Path) -> np.ndarray:
    """The cleanlab cross-validated ResNet-50, in canonical order (as a submission is)."""
    cleanlab = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    return datasets.imagenet_cleanlab_to_canonical(data_dir, cleanlab).astype(np.int64)


def test_it_scores_the_cleanlab_resnet50_on_original_labels_in_either_order(
        data_dir: Path, imagenet_sets: dict[str, CompiledLabelSet], imagenet_raw: dict,
        resnet50_top1: np.ndarray) -> None:
    cleanlab_preds = np.load(data_dir / "imagenet/cleanlab_cv_predicted_labels.npy")
    # both arrays in cleanlab (class-folder) order: no conversion involved
    expected = int(np.count_nonzero(cleanlab_preds == imagenet_raw["original_cleanlab"]))
    record = score_predictions({"imagenet-val": _ids(resnet50_top1)},
                              [imagenet_sets["original"]]).records["original"]
    _assert_counts(record, expected, 50_000)
    # the test's own permutation gives the same canonical predictions
    own = np.empty(50_000, dtype=np.int64)
    own[imagenet_raw["perm"]] = cleanlab_preds
    assert np.array_equal(own, resnet50_top1)


@pytest.mark.parametrize(("slug", "threshold"),
                         [("corrected", 3), ("corrected-t4", 4), ("corrected-t5", 5)])
def test_it_scores_the_cleanlab_resnet50_on_corrected_labels_by_the_vote_rules(
        slug: str, threshold: int, imagenet_sets: dict[str, CompiledLabelSet],
        imagenet_raw: dict, resnet50_top1: np.ndarray) -> None:
    original = imagenet_raw["original"]
    corrected, pruned, correctable = _corrected_reference(
        original, imagenet_raw["mturk"], threshold, one_based=True)
    top1 = resnet50_top1
    record = score_predictions({"imagenet-val": _ids(top1)},
                              [imagenet_sets[slug]]).records[slug]
    _assert_counts(record, *_count(top1 == corrected, pruned))
    acc1 = _count(top1 == original, correctable)
    cacc1 = _count(top1 == corrected, correctable)
    _assert_counts(record["correctable"]["acc1"], *acc1)
    _assert_counts(record["correctable"]["cacc1"], *cacc1)
    rest = pruned & ~correctable
    acc_b = _count(top1 == original, rest)
    assert record["noise_prevalence"] == {
        "n_c": int(correctable.sum()), "n_b": int(rest.sum()),
        "acc_c_original": acc1[0] / acc1[1], "acc_c_corrected": cacc1[0] / cacc1[1],
        "acc_b": acc_b[0] / acc_b[1]}
    assert record["top5"] is None


def test_it_scores_the_cleanlab_resnet50_on_real_with_its_novel_pairs(
        imagenet_sets: dict[str, CompiledLabelSet], imagenet_raw: dict,
        resnet50_top1: np.ndarray) -> None:
    real, rated = imagenet_raw["real"], imagenet_raw["rated"]
    included = correct = 0
    novel = set()
    for i, accepted in enumerate(real):
        if not accepted:
            continue
        predicted = int(resnet50_top1[i])
        included += 1
        if predicted in accepted:
            correct += 1
        elif (i, predicted) not in rated:
            novel.add((i, predicted))
    scores = score_predictions({"imagenet-val": _ids(resnet50_top1)}, [imagenet_sets["real"]])
    record, pairs = scores.records["real"], scores.novel["real"]
    _assert_counts(record, correct, included)
    assert record["novel_count"] == len(novel) > 0
    assert set(zip(pairs.examples.tolist(), pairs.classes.tolist(), strict=True)) == novel
    assert pairs.examples.tolist() == sorted(pairs.examples.tolist())
    assert pairs.scores is None  # ids only: no scores to show the reviewer


# ---------------------------------------------------------------- CIFAR-10H: real probabilities


def test_it_scores_real_probabilities_on_cifar10h_by_direct_formulas(
        data_dir: Path, cifar10_sets: dict[str, CompiledLabelSet]) -> None:
    path = data_dir / "cifar10/cleanlab_cv_probabilities.npy"
    preds = parse_predictions(path, num_examples=10_000, num_classes=10, keep_scores=True)
    assert preds.scores_kind == "probabilities"
    record = score_predictions({"cifar10-test": preds},
                              [cifar10_sets["cifar10h"]]).records["cifar10h"]

    model = np.load(path)
    human = np.load(data_dir / "cifar10/cifar10h_probs.npy").astype(np.float64)
    top1 = model.argmax(axis=1)
    agreement = [human[i, top1[i]] for i in range(10_000)]
    plurality = 0
    for i in range(10_000):
        most = max(human[i])
        plurality += int(top1[i]) in {c for c in range(10) if human[i, c] == most}
    p = np.clip(model.astype(np.float32).astype(np.float64), 1e-12, 1.0)
    cross_entropy = np.mean(-(human * np.log(p)).sum(axis=1))

    _assert_counts(record, plurality, 10_000)
    assert record["human_agreement"]["value"] == pytest.approx(np.mean(agreement), rel=1e-12)
    assert record["human_agreement"]["total"] == 10_000
    assert record["cross_entropy"]["value"] == pytest.approx(cross_entropy, rel=1e-12)
    assert record["cross_entropy"]["total"] == 10_000
