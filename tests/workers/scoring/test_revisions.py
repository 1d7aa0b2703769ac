"""Tests for workers.scoring.revisions: label-set versions from settled review verdicts
(multilabel, ImageNet-M, ReaL), ground-truth review of corrected sets, and export of a version
in the human_accuracy_v3.0.0.json and real.json layouts (SPEC "Review", MANIFEST.md).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workers.scoring import datasets, label_set_builders
from workers.scoring.catalog import label_set_spec
from workers.scoring.datasets import MturkRecord
from workers.scoring.label_set_builders import (
    CompiledLabelSet,
    build_corrected,
    compile_label_set,
    make_compiled,
)
from workers.scoring.metrics import score_label_set
from workers.scoring.multilabel import collapse_keys
from workers.scoring.predictions import Predictions
from workers.scoring.revisions import (
    GroundTruthVotes,
    Verdict,
    apply_ground_truth,
    apply_verdicts,
    export_multilabel,
    export_real,
)

PREFIX = "ILSVRC2012_val_"
V2_NAME = "some_v2_image.jpeg"
Pairs = set[tuple[int, int]]


def name(index: int) -> str:
    return f"{PREFIX}{index + 1:08d}.JPEG"


def keys(pairs: Pairs | list[tuple[int, int]], num_classes: int = 1000) -> np.ndarray:
    return np.array(sorted({e * num_classes + c for e, c in pairs}), dtype=np.int64)


def decode(array: np.ndarray, num_classes: int = 1000) -> Pairs:
    return {(k // num_classes, k % num_classes) for k in array.tolist()}


def fields(family: str, size: int, num_classes: int, kind: str = "multi") -> dict[str, Any]:
    return {"slug": family.replace("_", "-"), "benchmark": "imagenet",
            "image_set": "imagenet-val", "kind": kind, "family": family,
            "num_classes": num_classes, "size": size}


def snapshot(ls: CompiledLabelSet) -> dict[str, Any]:
    return {"arrays": {n: a.tolist() for n, a in ls.arrays.items()},
            "meta": json.loads(json.dumps(ls.meta)), "hash": ls.content_hash}


# ---------------------------------------------------------------- hand-made multi-label sets

CORRECT = {(0, 250), (2, 20), (4, 40)}  # 250 is the Siberian husky: 248 collapses in
UNCLEAR = {(1, 10)}
WRONG = {(0, 1)}
ANNOTATED = [True, True, True, True, True, False]  # 3 has empty lists; 5 is not annotated
PROBLEMATIC = [False, False, False, False, True, False]
ORGANISM = [True, True, False, False, False, False]


def multilabel_set(correct: Pairs = CORRECT, unclear: Pairs = UNCLEAR, wrong: Pairs = WRONG,
                   annotated: list[bool] = ANNOTATED,
                   problematic: list[bool] = PROBLEMATIC) -> CompiledLabelSet:
    """A 6-example multilabel set laid out exactly as the builder lays one out."""
    annotated_a, problematic_a = np.array(annotated), np.array(problematic)
    mask = annotated_a & ~problematic_a
    accepted = keys(correct | unclear)
    arrays = {"mask": mask, "accepted_keys": accepted, "correct_keys": keys(correct),
              "unclear_keys": keys(unclear), "wrong_keys": keys(wrong),
              "collapsed_keys": collapse_keys(accepted), "organism": np.array(ORGANISM),
              "annotated": annotated_a}
    meta = {"annotated": int(annotated_a.sum()),
            "problematic": int((annotated_a & problematic_a).sum()),
            "included": int(mask.sum()), "organism_included": int((mask & ORGANISM).sum())}
    return make_compiled(fields("multilabel", 6, 1000), arrays, meta)


def imagenet_m_set() -> CompiledLabelSet:
    """As the builder makes it: only the listed examples' (1 and 2) judgements."""
    def listed(pairs: Pairs) -> Pairs:
        return {(i, c) for i, c in pairs if i in (1, 2)}

    arrays = {"mask": np.array([False, True, True, False, False, False]),
              "accepted_keys": keys(listed(CORRECT | UNCLEAR)),
              "correct_keys": keys(listed(CORRECT)), "unclear_keys": keys(listed(UNCLEAR)),
              "wrong_keys": keys(listed(WRONG))}
    return make_compiled(fields("imagenet_m", 6, 1000), arrays, {"included": 2})


def lists(ls: CompiledLabelSet) -> dict[str, Pairs]:
    return {n: decode(ls.arrays[f"{n}_keys"]) for n in ("correct", "unclear", "wrong", "accepted")}


def test_it_adds_a_correct_verdict_to_the_correct_and_accepted_pairs() -> None:
    revised = apply_verdicts(multilabel_set(), [Verdict(2, 21, "correct")])
    assert lists(revised) == {"correct": CORRECT | {(2, 21)}, "unclear": UNCLEAR, "wrong": WRONG,
                              "accepted": CORRECT | UNCLEAR | {(2, 21)}}
    assert decode(revised.arrays["collapsed_keys"]) == CORRECT | UNCLEAR | {(2, 21), (0, 248)}
    assert revised.arrays["mask"].tolist() == [True, True, True, True, False, False]


def test_it_adds_an_unclear_verdict_to_the_unclear_and_accepted_pairs() -> None:
    revised = apply_verdicts(multilabel_set(), [Verdict(3, 836, "unclear")])
    assert lists(revised) == {"correct": CORRECT, "unclear": UNCLEAR | {(3, 836)}, "wrong": WRONG,
                              "accepted": CORRECT | UNCLEAR | {(3, 836)}}
    # sunglass (836) accepted: sunglasses (837) collapses in
    assert decode(revised.arrays["collapsed_keys"]) == \
        CORRECT | UNCLEAR | {(3, 836), (3, 837), (0, 248)}


def test_it_adds_a_wrong_verdict_to_the_wrong_pairs_only() -> None:
    revised = apply_verdicts(multilabel_set(), [Verdict(1, 11, "wrong")])
    assert lists(revised) == {"correct": CORRECT, "unclear": UNCLEAR, "wrong": WRONG | {(1, 11)},
                              "accepted": CORRECT | UNCLEAR}


def test_it_moves_a_judged_pair_to_the_list_of_its_new_verdict() -> None:
    revised = apply_verdicts(multilabel_set(), [Verdict(0, 250, "wrong"),
                                                Verdict(0, 1, "unclear")])
    assert lists(revised) == {"correct": {(2, 20), (4, 40)}, "unclear": {(1, 10), (0, 1)},
                              "wrong": {(0, 250)}, "accepted": {(2, 20), (4, 40), (1, 10), (0, 1)}}
    # the husky is no longer accepted, so the Eskimo dog no longer collapses in
    assert decode(revised.arrays["collapsed_keys"]) == {(2, 20), (4, 40), (1, 10), (0, 1)}


def test_it_lets_a_later_verdict_replace_an_earlier_one() -> None:
    verdicts = [Verdict(2, 21, "correct"), Verdict(2, 21, "unclear"), Verdict(2, 21, "wrong")]
    revised = apply_verdicts(multilabel_set(), verdicts)
    assert lists(revised) == {"correct": CORRECT, "unclear": UNCLEAR, "wrong": WRONG | {(2, 21)},
                              "accepted": CORRECT | UNCLEAR}
    assert revised.meta["revision"] == {"settled": 3, "correct": 1, "wrong": 1, "unclear": 1,
                                        "problematic": 0}
    # and across versions
    again = apply_verdicts(revised, [Verdict(2, 21, "correct")])
    assert lists(again) == lists(apply_verdicts(multilabel_set(), [Verdict(2, 21, "correct")]))


def test_it_excludes_an_example_flagged_problematic_and_recounts() -> None:
    revised = apply_verdicts(multilabel_set(), [Verdict(1, 11, "wrong", problematic=True)])
    assert revised.arrays["mask"].tolist() == [True, False, True, True, False, False]
    assert revised.arrays["annotated"].tolist() == ANNOTATED
    assert decode(revised.arrays["wrong_keys"]) == WRONG | {(1, 11)}
    assert revised.meta == {"annotated": 5, "problematic": 2, "included": 3,
                            "organism_included": 1,
                            "revision": {"settled": 1, "correct": 0, "wrong": 1, "unclear": 0,
                                         "problematic": 1}}


def test_it_never_includes_a_problematic_example_again() -> None:
    revised = apply_verdicts(multilabel_set(), [Verdict(4, 41, "correct")])
    assert revised.arrays["mask"].tolist() == [True, True, True, True, False, False]
    assert decode(revised.arrays["correct_keys"]) == CORRECT | {(4, 41)}
    assert revised.meta["problematic"] == 1


def test_it_annotates_and_includes_an_unannotated_example_a_verdict_judges() -> None:
    revised = apply_verdicts(multilabel_set(), [Verdict(5, 7, "correct")])
    assert revised.arrays["annotated"].tolist() == [True] * 6
    assert revised.arrays["mask"].tolist() == [True, True, True, True, False, True]
    assert {k: revised.meta[k] for k in ("annotated", "problematic", "included")} == \
        {"annotated": 6, "problematic": 1, "included": 5}


def test_it_leaves_the_parent_unchanged_and_changes_the_hash() -> None:
    parent = multilabel_set()
    before = snapshot(parent)
    revised = apply_verdicts(parent, [Verdict(0, 3, "correct"), Verdict(1, 1, "wrong", True)])
    assert snapshot(parent) == before
    assert revised.content_hash != parent.content_hash
    assert (revised.slug, revised.benchmark, revised.image_set, revised.kind, revised.family,
            revised.num_classes, revised.size) == \
        ("multilabel", "imagenet", "imagenet-val", "multi", "multilabel", 1000, 6)
    for array in revised.arrays.values():
        assert array.flags.writeable is False
    assert parent.meta.get("revision") is None


def test_it_keeps_the_hash_when_no_verdict_is_applied() -> None:
    for parent in (multilabel_set(), imagenet_m_set(), real_set()):
        revised = apply_verdicts(parent, [])
        assert revised.content_hash == parent.content_hash
        assert revised.meta["revision"] == {"settled": 0, "correct": 0, "wrong": 0,
                                            "unclear": 0, "problematic": 0}
        assert sorted(revised.arrays) == sorted(parent.arrays)


def test_it_leaves_revision_facts_out_of_the_content_hash() -> None:
    base = multilabel_set()
    with_revision = make_compiled(fields("multilabel", 6, 1000), dict(base.arrays),
                                  {**base.meta, "revision": {"settled": 9}})
    assert with_revision.content_hash == base.content_hash
    assert with_revision.meta["revision"] == {"settled": 9}


def test_it_revises_imagenet_m_and_ignores_problematic_flags() -> None:
    parent = imagenet_m_set()
    revised = apply_verdicts(parent, [Verdict(1, 10, "wrong", problematic=True),
                                      Verdict(2, 22, "unclear"), Verdict(2, 20, "wrong"),
                                      Verdict(1, 12, "correct")])
    assert lists(revised) == {
        "correct": {(1, 12)}, "unclear": {(2, 22)},
        "wrong": {(1, 10), (2, 20)}, "accepted": {(1, 12), (2, 22)}}
    assert revised.arrays["mask"].tolist() == [False, True, True, False, False, False]
    assert sorted(revised.arrays) == ["accepted_keys", "correct_keys", "mask", "unclear_keys",
                                      "wrong_keys"]
    assert revised.meta == {"included": 2, "revision": {"settled": 4, "correct": 1, "wrong": 2,
                                                        "unclear": 1, "problematic": 1}}


# ---------------------------------------------------------------- hand-made ReaL sets


def real_set() -> CompiledLabelSet:
    """5 examples, 10 classes; the lists of examples 2 and 4 are empty."""
    arrays = {"mask": np.array([True, True, False, True, False]),
              "accepted_keys": keys({(0, 1), (1, 2), (1, 3), (3, 4)}, 10),
              "wrong_keys": keys({(0, 2)}, 10)}
    meta = {"included": 3, "excluded": 2, "rated_images": 2, "accepted_pairs": 4,
            "wrong_pairs": 1}
    return make_compiled(fields("real", 5, 10), arrays, meta)


def real_pairs(ls: CompiledLabelSet) -> dict[str, Pairs]:
    return {n: decode(ls.arrays[f"{n}_keys"], 10) for n in ("accepted", "wrong")}


def test_it_accepts_a_correct_real_verdict_and_includes_an_empty_list_example() -> None:
    revised = apply_verdicts(real_set(), [Verdict(2, 5, "correct"), Verdict(0, 2, "correct")])
    assert real_pairs(revised) == {"accepted": {(0, 1), (0, 2), (1, 2), (1, 3), (2, 5), (3, 4)},
                                   "wrong": set()}
    assert revised.arrays["mask"].tolist() == [True, True, True, True, False]
    assert revised.meta == {"included": 4, "excluded": 1, "rated_images": 2,
                            "accepted_pairs": 6, "wrong_pairs": 0,
                            "revision": {"settled": 2, "correct": 2, "wrong": 0, "unclear": 0,
                                         "problematic": 0}}
    assert "problematic" not in revised.arrays


def test_it_marks_wrong_and_unclear_real_verdicts_wrong() -> None:
    revised = apply_verdicts(real_set(), [Verdict(1, 7, "wrong"), Verdict(1, 8, "unclear"),
                                          Verdict(1, 2, "unclear")])
    # ReaL counts only accepted labels: an unclear pair is judged, not accepted
    assert real_pairs(revised) == {"accepted": {(0, 1), (1, 3), (3, 4)},
                                   "wrong": {(0, 2), (1, 2), (1, 7), (1, 8)}}
    assert revised.arrays["mask"].tolist() == [True, True, False, True, False]
    assert (revised.meta["accepted_pairs"], revised.meta["wrong_pairs"]) == (3, 4)


def test_it_excludes_a_real_example_whose_last_label_is_judged_wrong() -> None:
    revised = apply_verdicts(real_set(), [Verdict(0, 1, "wrong")])
    assert real_pairs(revised) == {"accepted": {(1, 2), (1, 3), (3, 4)},
                                   "wrong": {(0, 1), (0, 2)}}
    assert revised.arrays["mask"].tolist() == [False, True, False, True, False]
    assert (revised.meta["included"], revised.meta["excluded"]) == (2, 3)


def test_it_excludes_a_problematic_real_example_for_good() -> None:
    revised = apply_verdicts(real_set(), [Verdict(3, 6, "correct", problematic=True)])
    assert revised.arrays["mask"].tolist() == [True, True, False, False, False]
    assert revised.arrays["problematic"].tolist() == [False, False, False, True, False]
    assert decode(revised.arrays["accepted_keys"], 10) == {(0, 1), (1, 2), (1, 3), (3, 4),
                                                           (3, 6)}
    assert revised.meta == {"included": 2, "excluded": 3, "rated_images": 2,
                            "accepted_pairs": 5, "wrong_pairs": 1, "problematic": 1,
                            "revision": {"settled": 1, "correct": 1, "wrong": 0, "unclear": 0,
                                         "problematic": 1}}
    later = apply_verdicts(revised, [Verdict(3, 7, "correct"), Verdict(2, 1, "correct")])
    assert later.arrays["mask"].tolist() == [True, True, True, False, False]
    assert later.arrays["problematic"].tolist() == [False, False, False, True, False]
    assert later.meta["problematic"] == 1
    assert export_real(later) == [[1], [2, 3], [1], [], []]


def test_it_scores_real_on_the_revised_pairs() -> None:
    revised = apply_verdicts(real_set(), [Verdict(2, 5, "correct"), Verdict(3, 4, "unclear")])
    top1 = Predictions(np.array([[1], [9], [5], [4], [0]], dtype=np.int32), None, None, None)
    record, novel = score_label_set(revised, top1)
    assert (record["correct"], record["total"]) == (2, 3)  # examples 0 and 2 of 0, 1, 2
    assert record["version_hash"] == revised.content_hash
    assert novel is not None and novel.examples.tolist() == [1]  # (1, 9) was never judged


# ---------------------------------------------------------------- verdict errors


@pytest.mark.parametrize(("verdict", "message"), [
    (Verdict(6, 0, "correct"), "verdict 1 on label set 'multilabel': example 6 is outside 0..5"),
    (Verdict(-1, 0, "correct"),
     "verdict 1 on label set 'multilabel': example -1 is outside 0..5"),
    (Verdict(0, 1000, "wrong"),
     "verdict 1 on label set 'multilabel': class 1000 is outside 0..999"),
    (Verdict(0, 2.0, "wrong"),  # type: ignore[arg-type]
     "verdict 1 on label set 'multilabel': class 2.0 is not an integer"),
    (Verdict(0, 2, "maybe"),  # type: ignore[arg-type]
     "verdict 1 on label set 'multilabel': unknown verdict 'maybe' (correct, wrong, unclear)"),
])
def test_it_names_an_invalid_verdict(verdict: Verdict, message: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        apply_verdicts(multilabel_set(), [Verdict(0, 3, "correct"), verdict])
    assert str(excinfo.value) == message


def test_it_refuses_verdicts_on_other_families() -> None:
    parent = corrected_set(3)
    with pytest.raises(ValueError) as excinfo:
        apply_verdicts(parent, [Verdict(0, 1, "correct")])
    assert str(excinfo.value) == ("label set 'corrected' is of family 'corrected'; "
                                  "apply_verdicts applies to multilabel, imagenet_m, real")


# ---------------------------------------------------------------- ground-truth review


def corrected_set(threshold: int) -> CompiledLabelSet:
    """6 examples, labels 0..5; example 1 is correctable (to 7), example 3 multi-label."""
    records = [MturkRecord(1, 1, 7, {"guessed": 5}), MturkRecord(3, 3, 8, {"both": 5})]
    arrays, meta = build_corrected(np.arange(6, dtype=np.int16), records, threshold)
    return make_compiled(fields("corrected", 6, 10, "single"), arrays, meta)


def corrected_state(ls: CompiledLabelSet, example: int) -> tuple[int, bool, bool]:
    a = ls.arrays
    return (int(a["corrected_labels"][example]), bool(a["pruned"][example]),
            bool(a["correctable"][example]))


@pytest.mark.parametrize(("votes", "threshold", "category"), [
    ({"given": 1, "guessed": 3, "both": 1}, 3, "correctable"),
    ({"given": 1, "guessed": 3, "both": 1}, 5, "non_agreement"),
    ({"guessed": 5}, 5, "correctable"),
    ({"both": 4, "guessed": 1}, 3, "multi_label"),
    ({"both": 4, "guessed": 1}, 5, "non_agreement"),
    ({"both": 5}, 5, "multi_label"),
    ({"given": 3, "guessed": 2}, 3, "non_error"),
    ({"given": 3, "guessed": 2}, 5, "non_error"),
    ({"neither": 3, "given": 2}, 3, "neither"),
    ({"neither": 3, "given": 2}, 5, "non_agreement"),
])
def test_it_applies_a_ground_truth_category_at_the_parents_threshold(
    votes: dict[str, int], threshold: int, category: str
) -> None:
    parent = corrected_set(threshold)
    revised = apply_ground_truth(parent, [GroundTruthVotes(2, 2, 9, votes)])
    expected = {"correctable": (9, True, True), "non_error": (2, True, False)}.get(
        category, (2, False, False))
    assert corrected_state(revised, 2) == expected
    assert revised.arrays["labels"].tolist() == [0, 1, 2, 3, 4, 5]
    review = [-1] * 6
    review[2] = label_set_builders.VOTE_CATEGORIES.index(category)
    assert revised.arrays["review_category"].tolist() == review
    tally = dict.fromkeys(label_set_builders.VOTE_CATEGORIES, 0)
    tally[category] = 1
    assert revised.meta == {
        "threshold": threshold, "flagged": 2,
        "counts": {"non_error": 0, "correctable": 1, "multi_label": 1, "neither": 0,
                   "non_agreement": 0},
        "pruned_size": 5 if category in ("correctable", "non_error") else 4,
        "correctable_size": 2 if category == "correctable" else 1,
        "ground_truth": {"reviewed": 1, "counts": tally},
        "revision": {"settled": 1, "counts": tally},
    }


def test_it_turns_a_correctable_example_back_into_a_non_error() -> None:
    revised = apply_ground_truth(corrected_set(3), [GroundTruthVotes(1, 1, 7, {"given": 4})])
    assert corrected_state(revised, 1) == (1, True, False)
    assert revised.arrays["corrected_labels"].tolist() == [0, 1, 2, 3, 4, 5]
    assert (revised.meta["pruned_size"], revised.meta["correctable_size"]) == (5, 0)


def test_it_makes_a_pruned_example_correctable_and_keeps_the_latest_review() -> None:
    parent = corrected_set(4)
    first = apply_ground_truth(parent, [GroundTruthVotes(3, 3, 6, {"guessed": 4, "given": 1}),
                                        GroundTruthVotes(0, 0, 5, {"both": 4})])
    assert corrected_state(first, 3) == (6, True, True)
    assert corrected_state(first, 0) == (0, False, False)
    # a later review of the same example replaces the earlier one, within and across versions
    second = apply_ground_truth(first, [GroundTruthVotes(0, 0, 5, {"neither": 4}),
                                        GroundTruthVotes(3, 3, 6, {"both": 2, "given": 2}),
                                        GroundTruthVotes(3, 3, 6, {"given": 3})])
    assert corrected_state(second, 0) == (0, False, False)
    assert corrected_state(second, 3) == (3, True, False)
    assert second.arrays["review_category"].tolist() == [3, -1, -1, 0, -1, -1]
    assert second.arrays["pruned"].tolist() == [False, True, True, True, True, True]
    assert second.meta["ground_truth"] == {
        "reviewed": 2, "counts": {"non_error": 1, "correctable": 0, "multi_label": 0,
                                  "neither": 1, "non_agreement": 0}}
    assert second.meta["revision"] == {
        "settled": 3, "counts": {"non_error": 1, "correctable": 0, "multi_label": 0,
                                 "neither": 1, "non_agreement": 1}}
    assert (second.meta["pruned_size"], second.meta["correctable_size"]) == (5, 1)


def test_it_leaves_a_corrected_parent_unchanged_and_keeps_its_hash_without_votes() -> None:
    parent = corrected_set(3)
    before = snapshot(parent)
    revised = apply_ground_truth(parent, [GroundTruthVotes(2, 2, 9, {"guessed": 3})])
    assert snapshot(parent) == before
    assert revised.content_hash != parent.content_hash
    unchanged = apply_ground_truth(parent, [])
    assert unchanged.content_hash == parent.content_hash
    assert sorted(unchanged.arrays) == sorted(parent.arrays)


@pytest.mark.parametrize(("votes", "message"), [
    (GroundTruthVotes(2, 3, 9, {"guessed": 5}), "ground-truth votes 0 on label set 'corrected': "
     "given label 3 of example 2 is not its original label 2"),
    (GroundTruthVotes(6, 0, 9, {"guessed": 5}),
     "ground-truth votes 0 on label set 'corrected': example 6 is outside 0..5"),
    (GroundTruthVotes(2, 2, 10, {"guessed": 5}),
     "ground-truth votes 0 on label set 'corrected': guessed class 10 is outside 0..9"),
    (GroundTruthVotes(2, 2, 9, {"guesed": 5}), "ground-truth votes 0 on label set 'corrected': "
     "unknown vote keys ['guesed'] (given, guessed, both, neither)"),
])
def test_it_names_invalid_ground_truth_votes(votes: GroundTruthVotes, message: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        apply_ground_truth(corrected_set(3), [votes])
    assert str(excinfo.value) == message


def test_it_refuses_ground_truth_votes_on_other_families() -> None:
    with pytest.raises(ValueError) as excinfo:
        apply_ground_truth(real_set(), [GroundTruthVotes(0, 1, 2, {"guessed": 5})])
    assert str(excinfo.value) == ("label set 'real' is of family 'real'; "
                                  "apply_ground_truth applies to corrected")


# ---------------------------------------------------------------- from a file: builder,
# revision against a from-scratch build, export


@pytest.fixture(scope="module")
def wnids(data_dir: Path) -> tuple[str, ...]:
    return datasets.imagenet_wnids(data_dir)


def problem(reason: str) -> dict[str, str]:
    return {"reason": reason, "reviewer": "ludwig", "server_username": "becca"}


@pytest.fixture(scope="module")
def raw(wnids: tuple[str, ...]) -> dict[str, Any]:
    """A small file in exactly the human_accuracy_v3.0.0.json layout (unsorted lists)."""
    return {
        "initial_annots": {
            name(0): {"wrong": [wnids[2], wnids[1]], "correct": [wnids[65]]},
            name(1): {"correct": [wnids[250]]},
            name(2): {"unclear": [wnids[836]], "wrong": [wnids[5]]},
            name(3): {},
            name(4): {"correct": [wnids[100]]},
            name(49_999): {"correct": [wnids[1], wnids[0]], "unclear": [wnids[999]],
                           "wrong": [wnids[998]]},
            V2_NAME: {"correct": [wnids[3]], "wrong": [wnids[4]]},
        },
        "problematic_images": {name(4): problem("marked as problematic in the review server"),
                               V2_NAME: problem("marked as problematic in the review server")},
        "imagenet_m": [name(49_999), name(1), V2_NAME],
    }


Build = Callable[[dict[str, Any]], dict[str, CompiledLabelSet]]


@pytest.fixture(scope="module")
def build(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Build:
    """build(raw): the multilabel and imagenet-m sets compiled from a file holding `raw`."""
    folder = tmp_path_factory.mktemp("revisions")
    count = iter(range(1_000_000))

    def run(content: dict[str, Any]) -> dict[str, CompiledLabelSet]:
        path = folder / f"human_accuracy_{next(count)}.json"
        path.write_text(json.dumps(content, indent=1), encoding="utf-8")
        return {slug: compile_label_set(label_set_spec("imagenet", slug), data_dir=data_dir,
                                        multilabel_file=path)
                for slug in ("multilabel", "imagenet-m")}

    return run


def with_verdicts(raw: dict[str, Any], verdicts: list[Verdict],
                  wnids: tuple[str, ...]) -> dict[str, Any]:
    """The file as it would read with the verdicts already in it (plain dict edits)."""
    out = copy.deepcopy(raw)
    for v in verdicts:
        entry = out["initial_annots"].setdefault(name(v.example), {})
        wnid = wnids[v.class_id]
        for judgement in ("correct", "wrong", "unclear"):
            if wnid in entry.get(judgement, []):
                entry[judgement].remove(wnid)
                if not entry[judgement]:
                    del entry[judgement]
        entry.setdefault(v.verdict, []).append(wnid)
        if v.problematic:
            out["problematic_images"][name(v.example)] = problem("flagged in review")
    return out


def normalised(raw: dict[str, Any]) -> dict[str, Any]:
    """The file minus ImageNetV2 entries, lists sorted, problematic reasons dropped."""
    val = [n for n in raw["initial_annots"] if n.startswith(PREFIX)]
    return {
        "initial_annots": {n: {j: sorted(v) for j, v in raw["initial_annots"][n].items()}
                           for n in val},
        "problematic_images": {n: {} for n in raw["problematic_images"] if n.startswith(PREFIX)},
        "imagenet_m": sorted(n for n in raw["imagenet_m"] if n.startswith(PREFIX)),
    }


@pytest.fixture(scope="module")
def built(build: Build, raw: dict[str, Any]) -> dict[str, CompiledLabelSet]:
    return build(raw)


def test_it_builds_correct_unclear_and_annotated_arrays(
    built: dict[str, CompiledLabelSet]
) -> None:
    for slug, labelset in built.items():
        a = labelset.arrays
        # ImageNet-M keeps only its listed images' (1 and 49,999) judgements
        listed = (lambda i: i in (1, 49_999)) if slug == "imagenet-m" else (lambda i: True)
        assert decode(a["correct_keys"]) == {p for p in {
            (0, 65), (1, 250), (4, 100), (49_999, 0), (49_999, 1)} if listed(p[0])}, slug
        assert decode(a["unclear_keys"]) == {p for p in {(2, 836), (49_999, 999)}
                                             if listed(p[0])}
        assert decode(a["wrong_keys"]) == {p for p in {(0, 1), (0, 2), (2, 5), (49_999, 998)}
                                           if listed(p[0])}
        assert a["accepted_keys"].tolist() == \
            np.union1d(a["correct_keys"], a["unclear_keys"]).tolist()
    annotated = built["multilabel"].arrays["annotated"]
    assert annotated.dtype == np.bool_
    assert np.flatnonzero(annotated).tolist() == [0, 1, 2, 3, 4, 49_999]
    assert "annotated" not in built["imagenet-m"].arrays
    assert label_set_builders.BUILDER_VERSION == 3


SCENARIOS = {
    "correct on a novel pair": [Verdict(1, 248, "correct")],
    "wrong on an accepted pair": [Verdict(1, 250, "wrong")],
    "unclear on a wrong pair": [Verdict(0, 1, "unclear")],
    "wrong replacing correct on an unclear pair": [Verdict(2, 836, "correct"),
                                                   Verdict(2, 836, "wrong")],
    "problematic": [Verdict(49_999, 7, "wrong", problematic=True)],
    "an unannotated image": [Verdict(10, 10, "correct")],
    "a problematic image stays out": [Verdict(4, 100, "wrong")],
    "several images": [Verdict(3, 600, "unclear"), Verdict(0, 65, "wrong"),
                       Verdict(0, 64, "correct", problematic=True)],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_it_gives_a_revision_the_hash_and_scores_of_a_build_from_scratch(
    build: Build, built: dict[str, CompiledLabelSet], raw: dict[str, Any],
    wnids: tuple[str, ...], scenario: str
) -> None:
    verdicts = SCENARIOS[scenario]
    original = built
    scratch = build(with_verdicts(raw, verdicts, wnids))
    top1 = np.zeros((50_000, 1), dtype=np.int32)
    top1[[0, 1, 2, 3, 4, 10, 49_999], 0] = [1, 248, 836, 600, 100, 10, 7]
    for slug in ("multilabel", "imagenet-m"):
        revised = apply_verdicts(original[slug], verdicts)
        assert revised.content_hash != original[slug].content_hash or slug == "imagenet-m"
        assert revised.content_hash == scratch[slug].content_hash, slug
        assert sorted(revised.arrays) == sorted(scratch[slug].arrays)
        for array_name, array in scratch[slug].arrays.items():
            assert revised.arrays[array_name].dtype == array.dtype, array_name
            assert revised.arrays[array_name].tolist() == array.tolist(), array_name
        assert {k: v for k, v in revised.meta.items() if k != "revision"} == scratch[slug].meta
        preds = Predictions(top1, None, None, None)
        record, novel = score_label_set(revised, preds)
        record_scratch, novel_scratch = score_label_set(scratch[slug], preds)
        assert record == record_scratch
        if novel is not None and novel_scratch is not None:
            assert novel.examples.tolist() == novel_scratch.examples.tolist()
            assert novel.classes.tolist() == novel_scratch.classes.tolist()
        # and the export of the revision is the file with the verdicts in it
    exported = export_multilabel(apply_verdicts(original["multilabel"], verdicts),
                                 apply_verdicts(original["imagenet-m"], verdicts), wnids=wnids)
    assert exported == normalised(with_verdicts(raw, verdicts, wnids))


def test_it_exports_the_multilabel_file_it_was_built_from(
    build: Build, built: dict[str, CompiledLabelSet], raw: dict[str, Any],
    wnids: tuple[str, ...]
) -> None:
    exported = export_multilabel(built["multilabel"], built["imagenet-m"], wnids=wnids)
    assert exported == normalised(raw)
    assert exported["initial_annots"][name(0)] == {"correct": [wnids[65]],
                                                   "wrong": sorted([wnids[1], wnids[2]])}
    assert exported["initial_annots"][name(3)] == {}  # annotated, every key absent
    assert exported["problematic_images"] == {name(4): {}}
    assert exported["imagenet_m"] == [name(1), name(49_999)]
    # the export builds the same label sets again
    rebuilt = build(exported)
    for slug in ("multilabel", "imagenet-m"):
        assert rebuilt[slug].content_hash == built[slug].content_hash
    without_m = export_multilabel(built["multilabel"], None, wnids=wnids)
    assert without_m == {k: v for k, v in exported.items() if k != "imagenet_m"}


def test_it_refuses_to_export_a_judgement_only_imagenet_m_has(
    built: dict[str, CompiledLabelSet], wnids: tuple[str, ...]
) -> None:
    revised_m = apply_verdicts(built["imagenet-m"], [Verdict(1, 248, "correct")])
    with pytest.raises(ValueError) as excinfo:
        export_multilabel(built["multilabel"], revised_m, wnids=wnids)
    assert str(excinfo.value) == ("label set 'imagenet-m' has a judgement that 'multilabel' "
                                  "lacks on ILSVRC2012_val_00000002.JPEG (correct_keys)")
    moved_m = apply_verdicts(built["imagenet-m"], [Verdict(49_999, 998, "unclear")])
    with pytest.raises(ValueError) as excinfo:
        export_multilabel(built["multilabel"], moved_m, wnids=wnids)
    assert str(excinfo.value) == ("label set 'imagenet-m' has a judgement that 'multilabel' "
                                  "lacks on ILSVRC2012_val_00050000.JPEG (unclear_keys)")
    # review revises multilabel only: its newer verdicts on ImageNet-M images are exported
    revised_ml = apply_verdicts(built["multilabel"], [Verdict(1, 248, "correct")])
    exported = export_multilabel(revised_ml, built["imagenet-m"], wnids=wnids)
    assert exported["initial_annots"][name(1)] == {"correct": sorted([wnids[248], wnids[250]])}
    assert exported["imagenet_m"] == [name(1), name(49_999)]
    with pytest.raises(ValueError) as excinfo:
        export_multilabel(built["multilabel"], None, wnids=wnids[:999])
    assert str(excinfo.value) == "export_multilabel needs 1000 wnids, got 999"


def test_it_exports_the_real_labels_as_real_json(
    compiled: Callable[[str, str], CompiledLabelSet], real_lists: list[list[int]]
) -> None:
    exported = export_real(compiled("imagenet", "real"))
    assert len(exported) == 50_000
    assert exported == [sorted(labels) for labels in real_lists]


def test_it_exports_an_empty_list_where_real_excludes_an_example() -> None:
    assert export_real(real_set()) == [[1], [2, 3], [], [4], []]
    revised = apply_verdicts(real_set(), [Verdict(1, 0, "correct", problematic=True),
                                          Verdict(4, 9, "unclear")])
    assert export_real(revised) == [[1], [], [], [4], []]
