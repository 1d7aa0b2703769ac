"""Tests for workers.scoring.revisions.apply_ground_truth: reviewing a corrected label set."""

from __future__ import annotations

import pytest

from tests.workers.scoring.support import corrected_set, real_set, snapshot
from workers.scoring import label_set_builders
from workers.scoring.families.registry import FAMILIES
from workers.scoring.label_set_builders import CompiledLabelSet
from workers.scoring.revisions import GroundTruthVotes, apply_ground_truth

# ---------------------------------------------------------------- ground-truth review


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


def test_it_takes_ground_truth_votes_only_on_the_corrected_family() -> None:
    # no family-name guard: the family route gives ground-truth review to corrected alone
    assert sorted(name for name, family in FAMILIES.items()
                  if family.apply_ground_truth is not None) == ["corrected"]
    assert FAMILIES["corrected"].apply_ground_truth is apply_ground_truth
    # a set of another family called directly still lacks what the review reads
    with pytest.raises(ValueError) as excinfo:
        apply_ground_truth(real_set(), [GroundTruthVotes(0, 1, 2, {"guessed": 5})])
    assert str(excinfo.value) == (
        "label set 'real' lacks arrays ['correctable', 'corrected_labels', 'labels', 'pruned'] "
        "(compiled by an older builder?)")
