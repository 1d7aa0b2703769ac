"""Tests for novel-prediction verdicts (revisions.apply_verdicts, through each reviewable family)
on hand-made multilabel, ImageNet-M (family subset) and ReaL label sets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.workers.scoring.support import (
    Pairs,
    apply_verdicts,
    decode,
    export,
    fields,
    keys,
    real_set,
    snapshot,
)
from workers.scoring.families.registry import FAMILIES
from workers.scoring.label_set_builders import CompiledLabelSet, make_compiled
from workers.scoring.multilabel_annotations import collapse_keys
from workers.scoring.predictions import Predictions
from workers.scoring.revisions import Verdict, keys_replace
from workers.scoring.scorer import score_label_set

# ---------------------------------------------------------------- hand-made multi-label sets

CORRECT = {(0, 250), (2, 20), (4, 40)}  # 250 is the Siberian husky: 248 collapses in
UNCLEAR = {(1, 10)}
WRONG = {(0, 1)}
ANNOTATED = [True, True, True, True, True, False]  # 3 has empty lists; 5 is not annotated
PROBLEMATIC = [False, False, False, False, True, False]
ORGANISM = [True, True, False, False, False, False]
ORIGINAL = [250, 10, 400, 500, 600, 999]  # organism classes for the first two, as ORGANISM


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
              "annotated": annotated_a, "original_labels": np.array(ORIGINAL, dtype=np.int16)}
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
    return make_compiled(fields("subset", 6, 1000, slug="imagenet-m"), arrays,
                         {"included": 2})


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
    assert (revised.slug, revised.benchmark, revised.example_set, revised.kind, revised.family,
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
    assert export(later) == [[1], [2, 3], [1], [], []]


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


def test_it_takes_verdicts_only_on_the_reviewable_families() -> None:
    # no family-name guard: a family that takes no verdicts has no apply_verdicts at all
    reviewable = sorted(name for name, family in FAMILIES.items()
                        if family.apply_verdicts is not None)
    assert reviewable == ["multilabel", "real", "subset"]
    assert FAMILIES["corrected"].apply_verdicts is None
    assert FAMILIES["corrected"].reviewable is False


@given(keys=st.lists(st.integers(0, 80), max_size=40),
       touched=st.lists(st.integers(0, 80), max_size=8),
       added=st.lists(st.integers(0, 80), max_size=8),
       sorted_unique=st.booleans())
def test_it_replaces_keys_as_the_set_difference_then_the_union(
    keys: list[int], touched: list[int], added: list[int], sorted_unique: bool
) -> None:
    """The binary-search replacement of a few pairs is the set operation it stands for, on a
    sorted unique list (every version's) and on any other (the general path)."""
    given_keys = np.unique(keys) if sorted_unique else np.array(keys, dtype=np.int64)
    expected = sorted((set(keys) - set(touched)) | set(added))
    replaced = keys_replace(given_keys, np.array(touched, dtype=np.int64),
                        np.array(added, dtype=np.int64))
    assert replaced.dtype == np.int64
    assert replaced.tolist() == expected
