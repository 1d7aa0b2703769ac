"""Tests for workers.scoring.scorer on hand-made sets of every family (docs/metrics.md §2-§8)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from tests.workers.scoring.support import assert_counts as _assert_counts
from tests.workers.scoring.support import ids as _ids
from workers.scoring.families.registry import UnknownFamilyError
from workers.scoring.hits import in_keys
from workers.scoring.label_set_builders import CompiledLabelSet, make_compiled, pair_keys
from workers.scoring.predictions import Predictions
from workers.scoring.scorer import score_label_set, score_predictions

# ---------------------------------------------------------------- hand-made label sets


def _ls(family: str, arrays: dict[str, np.ndarray], *, size: int, num_classes: int = 10,
        slug: str | None = None, example_set: str = "tiny-test") -> CompiledLabelSet:
    kind = {"real": "multi", "multilabel": "multi", "subset": "multi",
            "soft": "soft"}.get(family, "single")
    fields = {"slug": slug or family, "benchmark": "tiny", "example_set": example_set, "kind": kind,
              "family": family, "num_classes": num_classes, "size": size}
    return make_compiled(fields, arrays, {})


def _keys(pairs: list[tuple[int, int]], num_classes: int) -> np.ndarray:
    array = np.array(pairs)
    return pair_keys(array[:, 0], array[:, 1], num_classes)


def _topk(rows: list[list[int]], scores: list[list[float]] | None = None) -> Predictions:
    topk = np.array(rows, dtype=np.int32)
    topk_scores = None if scores is None else np.array(scores, dtype=np.float32)
    return Predictions(topk, topk_scores, None, None if scores is None else "logits")


# labels 0..5; label at position 0, 1, 4, 0, absent, absent
SINGLE_ROWS = [[0, 1, 2, 3, 4], [2, 1, 3, 4, 5], [9, 8, 7, 6, 2], [3, 0, 1, 2, 4],
               [5, 6, 7, 8, 9], [0, 1, 2, 3, 4]]


@pytest.mark.parametrize("family", ["original", "new_test_set"])
def test_it_counts_top1_and_top5_against_single_labels(family: str) -> None:
    ls = _ls(family, {"labels": np.arange(6)}, size=6)
    record, novel = score_label_set(ls, _topk(SINGLE_ROWS))
    assert novel is None
    _assert_counts(record, 2, 6)
    _assert_counts(record["top5"], 4, 6)
    assert {k: record[k] for k in ("label_set", "image_set", "family", "version_hash")} == {
        "label_set": family, "image_set": "tiny-test", "family": family,
        "version_hash": ls.content_hash}


@pytest.mark.parametrize("k", [1, 3, 4])
def test_it_gives_no_top5_when_fewer_than_five_predictions(k: int) -> None:
    ls = _ls("original", {"labels": np.arange(6)}, size=6)
    record, _ = score_label_set(ls, _topk([row[:k] for row in SINGLE_ROWS]))
    _assert_counts(record, 2, 6)
    assert record["top5"] is None


def test_it_adds_the_gap_to_original_on_a_new_test_set() -> None:
    original = _ls("original", {"labels": np.arange(6)}, size=6)
    new = _ls("new_test_set", {"labels": np.array([1, 2, 3, 4])}, size=4,
              slug="tiny-new", example_set="tiny-new")
    scores = score_predictions({"tiny-test": _topk(SINGLE_ROWS),
                               "tiny-new": _topk([[1], [0], [3], [9]])}, [original, new])
    _assert_counts(scores.records["tiny-new"], 2, 4)
    assert scores.records["tiny-new"]["gap"] == 2 / 6 - 2 / 4


def test_it_takes_the_gap_from_the_reference_label_set_whatever_its_slug() -> None:
    given = _ls("original", {"labels": np.arange(6)}, size=6, slug="given")
    new = _ls("new_test_set", {"labels": np.array([1, 2, 3, 4])}, size=4,
              slug="tiny-new", example_set="tiny-new")
    scores = score_predictions({"tiny-test": _topk(SINGLE_ROWS),
                               "tiny-new": _topk([[1], [0], [3], [9]])}, [given, new])
    assert scores.records["tiny-new"]["gap"] == 2 / 6 - 2 / 4


def test_it_gives_no_gap_without_original_predictions_and_skips_unsubmitted_sets() -> None:
    original = _ls("original", {"labels": np.arange(6)}, size=6)
    new = _ls("new_test_set", {"labels": np.array([1, 2, 3, 4])}, size=4,
              slug="tiny-new", example_set="tiny-new")
    scores = score_predictions({"tiny-new": _topk([[1], [0], [3], [9]])}, [original, new])
    assert list(scores.records) == ["tiny-new"]
    assert scores.records["tiny-new"]["gap"] is None


# corrected: C = {7, 8, 9} (relabelled), U = {5, 6} (pruned), B = P - C = {0, 1, 2, 3, 4}
CORRECTED_ARRAYS = {
    "labels": np.arange(10),
    "corrected_labels": np.array([0, 1, 2, 3, 4, 5, 6, 8, 9, 0]),
    "pruned": np.array([1, 1, 1, 1, 1, 0, 0, 1, 1, 1], dtype=bool),
    "correctable": np.array([0, 0, 0, 0, 0, 0, 0, 1, 1, 1], dtype=bool),
}
CORRECTED_ROWS = [[0, 1, 2, 3, 4], [1, 0, 2, 3, 4], [3, 2, 0, 1, 4], [3, 0, 1, 2, 4],
                  [0, 1, 5, 6, 7], [5, 0, 1, 2, 3], [0, 1, 2, 3, 4], [8, 7, 0, 1, 2],
                  [8, 7, 6, 5, 4], [0, 9, 1, 2, 3]]


def test_it_scores_corrected_labels_over_the_pruned_and_correctable_sets() -> None:
    record, novel = score_label_set(_ls("corrected", CORRECTED_ARRAYS, size=10),
                                    _topk(CORRECTED_ROWS))
    assert novel is None
    # top-1 vs corrected on P = {0,1,2,3,4,7,8,9}: hits 0, 1, 3, 7, 9
    _assert_counts(record, 5, 8)
    # top-5 vs corrected on P: misses only 4 (label 4 absent) and 8 (9 absent)
    _assert_counts(record["top5"], 6, 8)
    # on C: original hits only 8 (8); corrected hits 7 (8) and 9 (0)
    _assert_counts(record["correctable"]["acc1"], 1, 3)
    _assert_counts(record["correctable"]["cacc1"], 2, 3)
    assert record["noise_prevalence"] == {"n_c": 3, "n_b": 5, "acc_c_original": 1 / 3,
                                          "acc_c_corrected": 2 / 3, "acc_b": 3 / 5}
    # original labels on P: hits 0, 1, 3, 8
    _assert_counts(record["original_on_pruned"], 4, 8)


def test_it_gives_no_corrected_top5_when_fewer_than_five_predictions() -> None:
    record, _ = score_label_set(_ls("corrected", CORRECTED_ARRAYS, size=10),
                                _topk([row[:2] for row in CORRECTED_ROWS]))
    _assert_counts(record, 5, 8)
    assert record["top5"] is None


def _real_set() -> CompiledLabelSet:
    accepted = [(0, 1), (0, 2), (1, 3), (2, 4), (3, 0), (3, 5), (4, 7)]  # example 5: no list
    wrong = [(0, 9), (1, 6), (2, 8), (4, 2)]
    return _ls("real", {
        "mask": np.array([1, 1, 1, 1, 1, 0], dtype=bool),
        "accepted_keys": _keys(accepted, 10),
        "wrong_keys": _keys(wrong, 10),
    }, size=6)


REAL_ROWS = [[2, 9, 1], [6, 3, 0], [5, 4, 8], [5, 0, 2], [3, 2, 7], [1, 2, 3]]
REAL_SCORES = [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.6, 0.3, 0.1], [0.4, 0.35, 0.25],
               [0.9, 0.05, 0.04], [0.8, 0.1, 0.1]]


def test_it_scores_real_top1_second_and_third_and_finds_novel_pairs_with_scores() -> None:
    record, novel = score_label_set(_real_set(), _topk(REAL_ROWS, REAL_SCORES))
    _assert_counts(record, 2, 5)  # top-1 accepted: 0 (2), 3 (5)
    _assert_counts(record["second"], 3, 5)  # 1 (3), 2 (4), 3 (0)
    _assert_counts(record["third"], 2, 5)  # 0 (1), 4 (7)
    # top-1 neither accepted nor wrong, on included images: (2, 5) and (4, 3);
    # (1, 6) was judged wrong, and example 5 is excluded
    assert record["novel_count"] == 2
    assert novel.examples.tolist() == [2, 4]
    assert novel.classes.tolist() == [5, 3]
    assert novel.scores.tolist() == [np.float32(0.6), np.float32(0.9)]
    assert novel.examples.dtype == np.int64 and novel.classes.dtype == np.int64


def test_it_leaves_out_real_positions_the_submission_lacks() -> None:
    record, novel = score_label_set(_real_set(), _topk([r[:2] for r in REAL_ROWS]))
    _assert_counts(record["second"], 3, 5)
    assert record["third"] is None
    assert novel.scores is None
    record, _ = score_label_set(_real_set(), _topk([r[:1] for r in REAL_ROWS]))
    _assert_counts(record, 2, 5)
    assert record["second"] is None and record["third"] is None


def _multilabel_set() -> CompiledLabelSet:
    accepted = [(0, 250), (1, 1), (2, 100), (3, 836), (4, 504), (5, 7), (6, 10)]
    collapsed = accepted + [(0, 248), (3, 837), (4, 968)]  # husky, sunglass, coffee mug
    return _ls("multilabel", {
        "mask": np.array([1, 1, 1, 1, 1, 0, 1], dtype=bool),
        "accepted_keys": _keys(accepted, 1000),
        "correct_keys": _keys(accepted[:-1], 1000),
        "unclear_keys": _keys(accepted[-1:], 1000),
        "wrong_keys": _keys([(1, 2), (3, 900), (6, 900)], 1000),
        "collapsed_keys": _keys(collapsed, 1000),
        "organism": np.array([1, 1, 1, 0, 0, 0, 0], dtype=bool),
        "annotated": np.ones(7, dtype=bool),
        # organism classes 250 (two images) and 100; object classes 836 (two images) and
        # 504; example 5 (class 900) is not evaluated
        "original_labels": np.array(ML_CLASSES, dtype=np.int16),
    }, size=7, num_classes=1000)


ML_CLASSES = [250, 250, 100, 836, 836, 900, 504]
Z_95 = 1.959963984540054  # the two-sided 95% normal quantile


def _assert_class_mean(record: dict, per_class: dict[int, tuple[int, int]], *,
                       among: int) -> None:
    """The class mean of hand-counted (correct, total) per class, its normal interval, the
    pooled counts with their Clopper-Pearson interval, and the class counts."""
    accuracies = [c / t for c, t in per_class.values()]
    mean = sum(accuracies) / len(accuracies)
    variance = sum(p * (1 - p) / t for p, (_, t) in zip(accuracies, per_class.values(),
                                                       strict=True)) / len(accuracies) ** 2
    correct = sum(c for c, _ in per_class.values())
    total = sum(t for _, t in per_class.values())
    assert record["accuracy"] == pytest.approx(mean, abs=1e-15)
    assert record["ci_low"] == pytest.approx(max(0.0, mean - Z_95 * math.sqrt(variance)), abs=1e-15)
    assert record["ci_high"] == pytest.approx(min(1.0, mean + Z_95 * math.sqrt(variance)),
                                              abs=1e-15)
    assert record["ci_method"] == "normal"
    assert (record["correct"], record["total"]) == (correct, total)
    assert (record["classes_evaluated"], record["classes_without_images"]) == \
        (len(per_class), among - len(per_class))
    _assert_counts(record["pooled_accuracy"], correct, total)


def test_it_scores_multilabel_as_a_mean_over_classes_with_collapsed_organism_object_and_novel(
) -> None:
    top1 = [248, 1, 2, 837, 504, 7, 900]
    record, novel = score_label_set(_multilabel_set(), _ids(top1))
    # hits 1 and 4 of the included 0, 1, 2, 3, 4, 6: class 250 1 of 2 (examples 0, 1),
    # 100 0 of 1 (2), 836 1 of 2 (3, 4), 504 0 of 1 (6)
    _assert_class_mean(record, {250: (1, 2), 100: (0, 1), 836: (1, 2), 504: (0, 1)},
                       among=1000)
    assert record["accuracy"] == 0.25  # (1/2 + 0 + 1/2 + 0) / 4, where pooled is 2/6
    # sd = sqrt((1/8 + 1/8) / 16) = 1/8
    assert record["ci_low"] == pytest.approx(0.25 - Z_95 / 8, abs=1e-15)
    # collapsed: plus 0 (248) and 3 (837)
    _assert_class_mean(record["collapsed"], {250: (2, 2), 100: (0, 1), 836: (2, 2),
                                             504: (0, 1)}, among=1000)
    assert record["collapsed"]["accuracy"] == 0.5
    _assert_class_mean(record["organism"], {250: (1, 2), 100: (0, 1)}, among=410)
    _assert_class_mean(record["object"], {836: (1, 2), 504: (0, 1)}, among=590)
    # (2, 2) is novel: the wrong pair (1, 2) belongs to example 1; (6, 900) was judged
    # wrong; a collapse hit (0, 248), (3, 837) is still unjudged, so it is novel
    assert record["novel_count"] == 3
    assert novel.examples.tolist() == [0, 2, 3]
    assert novel.classes.tolist() == [248, 2, 837]
    assert novel.scores is None


def _imagenet_m_set() -> CompiledLabelSet:
    return _ls("subset", {
        "mask": np.array([0, 1, 0, 0, 1, 0, 1, 0], dtype=bool),
        "accepted_keys": _keys([(1, 10), (4, 20), (4, 21), (6, 30)], 1000),
        "correct_keys": _keys([(1, 10), (4, 20), (6, 30)], 1000),
        "unclear_keys": _keys([(4, 21)], 1000),
        "wrong_keys": _keys([(6, 31)], 1000),
    }, size=8, num_classes=1000, slug="imagenet-m", example_set="imagenet-val")


def test_it_lists_the_imagenet_m_misses_by_file_name() -> None:
    top1 = [0, 10, 0, 0, 22, 0, 31, 0]
    record, novel = score_label_set(_imagenet_m_set(), _ids(top1))
    assert novel is None
    _assert_counts(record, 1, 3)
    assert record["misses"] == [
        {"index": 4, "file": "ILSVRC2012_val_00000005.JPEG", "predicted": 22},
        {"index": 6, "file": "ILSVRC2012_val_00000007.JPEG", "predicted": 31}]
    names = tuple(f"class {i}" for i in range(1000))
    record, _ = score_label_set(_imagenet_m_set(), _ids(top1), class_names=names)
    assert [m["predicted_name"] for m in record["misses"]] == ["class 22", "class 31"]


def test_it_reports_no_imagenet_m_misses_when_all_are_accepted() -> None:
    record, _ = score_label_set(_imagenet_m_set(), _ids([0, 10, 0, 0, 21, 0, 30, 0]))
    _assert_counts(record, 3, 3)
    assert record["misses"] == []


HUMAN = [[0.5, 0.5, 0.0], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8], [0.4, 0.3, 0.3]]
MODEL = [[0.25, 0.75, 0.0], [0.6, 0.0, 0.4], [0.1, 0.2, 0.7], [0.3, 0.5, 0.2]]


def _soft_predictions(kind: str | None) -> Predictions:
    scores = np.array(MODEL, dtype=np.float32)
    topk = np.argsort(-scores, axis=1, kind="stable").astype(np.int32)
    if kind is None:
        return Predictions(topk[:, :1], None, None, None)
    return Predictions(topk, np.take_along_axis(scores, topk, 1), scores, kind)


def test_it_scores_cifar10h_plurality_with_ties_agreement_and_cross_entropy() -> None:
    ls = _ls("soft", {"probs": np.array(HUMAN)}, size=4, num_classes=3)
    record, novel = score_label_set(ls, _soft_predictions("probabilities"))
    assert novel is None
    # top-1: 1 (tied maximum: counts), 0 (no), 2 (yes), 1 (no)
    _assert_counts(record, 2, 4)
    assert record["human_agreement"]["value"] == pytest.approx((0.5 + 0.2 + 0.8 + 0.3) / 4,
                                                               rel=1e-15)
    assert record["human_agreement"]["total"] == 4
    losses = []
    for h, p in zip(HUMAN, MODEL, strict=True):
        losses.append(-sum(hc * math.log(max(float(np.float32(pc)), 1e-12))
                           for hc, pc in zip(h, p, strict=True)))
    assert record["cross_entropy"]["value"] == pytest.approx(sum(losses) / 4, rel=1e-12)
    assert record["cross_entropy"]["total"] == 4


@pytest.mark.parametrize("kind", ["logits", None])
def test_it_gives_no_cross_entropy_for_logits_or_ids(kind: str | None) -> None:
    ls = _ls("soft", {"probs": np.array(HUMAN)}, size=4, num_classes=3)
    record, _ = score_label_set(ls, _soft_predictions(kind))
    _assert_counts(record, 2, 4)
    assert record["cross_entropy"] is None


def test_it_refuses_predictions_for_the_wrong_number_of_examples() -> None:
    ls = _ls("original", {"labels": np.arange(6)}, size=6)
    with pytest.raises(ValueError, match="5 predictions for 6 examples"):
        score_label_set(ls, _topk(SINGLE_ROWS[:5]))


FAMILIES_DIR = PROJECT_ROOT / "workers" / "scoring" / "families"


def test_it_refuses_a_family_without_a_metric() -> None:
    ls = CompiledLabelSet(slug="x", benchmark="tiny", example_set="tiny-test", kind="single",
                          family="mystery", num_classes=10, size=6,
                          arrays={"labels": np.arange(6)})
    with pytest.raises(UnknownFamilyError) as excinfo:
        score_label_set(ls, _topk(SINGLE_ROWS))
    # every registered family named, whichever modules the families package has
    known = sorted(path.stem for path in FAMILIES_DIR.glob("*.py")
                   if "FAMILY = Family(" in path.read_text())
    assert "original" in known and "real" in known
    assert str(excinfo.value) == f"no label-set family 'mystery' (known: {', '.join(known)})"


def test_it_finds_pairs_in_sorted_keys_including_past_the_last_key() -> None:
    keys = pair_keys(np.array([0, 2, 2]), np.array([3, 1, 9]), 10)  # 3, 21, 29
    examples, classes = np.array([0, 0, 2, 2, 3, 9]), np.array([3, 4, 1, 9, 0, 9])
    assert in_keys(keys, examples, classes, 10).tolist() == [True, False, True, True, False,
                                                             False]
    assert in_keys(keys[:0], examples, classes, 10).tolist() == [False] * 6
