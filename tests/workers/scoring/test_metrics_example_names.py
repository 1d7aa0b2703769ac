"""Example names in the records come from the caller (the benchmark's naming), and the key
lookups that find judged pairs give the same answer by bitmap as by search."""

from __future__ import annotations

import numpy as np

from tests.workers.scoring.support import ids as _ids
from workers.scoring.hits import _BITMAP_MIN_QUERIES, in_keys
from workers.scoring.label_set_builders import CompiledLabelSet, make_compiled, pair_keys
from workers.scoring.scorer import default_example_namer, score_label_set, score_predictions


def _listed_set(example_set: str) -> CompiledLabelSet:
    """Four listed examples (1, 4, 6, 7) of eight; class 10 accepted on each."""
    fields = {"slug": "listed", "benchmark": "tiny", "example_set": example_set, "kind": "multi",
              "family": "subset", "num_classes": 1000, "size": 8}
    accepted = pair_keys(np.array([1, 4, 6, 7]), np.array([10, 10, 10, 10]), 1000)
    return make_compiled(fields, {
        "mask": np.array([0, 1, 0, 0, 1, 0, 1, 1], dtype=bool),
        "accepted_keys": accepted, "correct_keys": accepted,
        "unclear_keys": accepted[:0], "wrong_keys": accepted[:0],
    }, {})


TOP1 = [0, 10, 0, 0, 3, 0, 10, 5]  # misses: 4 (class 3) and 7 (class 5)


def test_it_names_the_misses_with_the_callers_namer() -> None:
    names = ("r-a.txt", "r-b.txt", "r-c.txt", "r-d.txt", "r-e.txt", "r-f.txt", "r-g.txt",
             "r-h.txt")
    record, _ = score_label_set(_listed_set("reviews-test"), _ids(TOP1),
                                example_name=names.__getitem__)
    assert [(m["index"], m["file"], m["predicted"]) for m in record["misses"]] == [
        (4, "r-e.txt", 3), (7, "r-h.txt", 5)]


def test_it_takes_each_example_sets_namer_in_score_predictions() -> None:
    scores = score_predictions({"reviews-test": _ids(TOP1)}, [_listed_set("reviews-test")],
                               example_names={"reviews-test": lambda i: f"review {i + 100}"})
    assert [m["file"] for m in scores.records["listed"]["misses"]] == [
        "review 104", "review 107"]


def test_it_names_examples_by_index_when_the_caller_gives_no_namer() -> None:
    record, _ = score_label_set(_listed_set("reviews-test"), _ids(TOP1))
    assert [m["file"] for m in record["misses"]] == ["reviews-test[4]", "reviews-test[7]"]
    assert default_example_namer("cifar10-test")(7) == "cifar10-test[7]"


def test_it_keeps_imagenet_file_names_by_default() -> None:
    """The names ImageNet records have always carried: ILSVRC2012_val_<file number>.JPEG,
    file number = index + 1, eight digits (what imagenet.toml's pattern declares)."""
    name = default_example_namer("imagenet-val")
    assert [name(i) for i in range(50_000)] == [
        "ILSVRC2012_val_" + str(i + 1).zfill(8) + ".JPEG" for i in range(50_000)]
    record, _ = score_label_set(_listed_set("imagenet-val"), _ids(TOP1))
    assert [m["file"] for m in record["misses"]] == [
        "ILSVRC2012_val_00000005.JPEG", "ILSVRC2012_val_00000008.JPEG"]


def test_it_finds_the_same_pairs_by_bitmap_as_by_search() -> None:
    """Many queries on a read-only key array use a bitmap; keys that share a byte, key 0, the
    largest key and queries past it must agree with plain set membership."""
    rng = np.random.default_rng(7)
    keys = np.unique(np.concatenate([
        [0, 1, 7, 8, 9, 15, 16], rng.integers(0, 3_000_000, 20_000), [2_999_999]]))
    keys.setflags(write=False)
    n = 3 * _BITMAP_MIN_QUERIES
    examples = rng.integers(0, 3_100, n)
    classes = rng.integers(0, 1000, n)
    examples[:len(keys[:50])] = keys[:50] // 1000  # some queries that are keys
    classes[:len(keys[:50])] = keys[:50] % 1000
    present = set(keys.tolist())
    expected = [e * 1000 + c in present
                for e, c in zip(examples.tolist(), classes.tolist(), strict=True)]
    found = in_keys(keys, examples, classes, 1000)
    assert found.tolist() == expected
    assert 50 <= sum(expected) < n
    writable = keys.copy()  # the search path
    assert in_keys(writable, examples, classes, 1000).tolist() == expected
