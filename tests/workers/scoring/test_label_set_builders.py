"""Tests for workers.scoring.catalog and workers.scoring.label_set_builders: the catalog,
the label-set builders (SPEC "Label sets and metrics" 1-3, 6, 7) on the real data, and the
compiled, hashed, cached form.

Expected values on the real data are derived here with plain Python loops over the public
files; the only numbers taken from outside are the published counts of Northcutt et al. 2021.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workers.scoring import datasets, label_set_builders
from workers.scoring.catalog import BENCHMARKS, benchmark_spec, label_set_spec
from workers.scoring.datasets import DataError, MturkRecord
from workers.scoring.label_set_builders import (
    CompiledLabelSet,
    build_corrected,
    compile_label_set,
    corrected_categories,
    evaluated_mask,
    load_compiled,
    make_compiled,
    missing_files,
    save_compiled,
)

Compiled = Callable[[str, str], CompiledLabelSet]

SIZES = {"imagenet": 50_000, "cifar10": 10_000, "mnist": 10_000}
VOTE_FILES = {  # vote file, and whether its ids are 1-based file numbers
    "imagenet": ("imagenet/cleanlab_mturk.json", True),
    "cifar10": ("cifar10/cleanlab_mturk.json", False),
    "mnist": ("mnist/cleanlab_mturk.json", False),
}
CATALOG_CORRECTED = {("imagenet", 3): "corrected", ("imagenet", 4): "corrected-t4",
                     ("imagenet", 5): "corrected-t5", ("cifar10", 3): "corrected",
                     ("mnist", 3): "corrected"}
CATEGORIES = ("non_error", "correctable", "multi_label", "neither", "non_agreement")
UNKNOWN = {"multi_label", "neither", "non_agreement"}

# Northcutt et al. 2021, label-error categories at agreement threshold 3:
# (non-errors, correctable, multi-label, neither, non-agreement)
PUBLISHED_COUNTS = {
    "imagenet": (2524, 1428, 597, 293, 598),
    "cifar10": (221, 18, 0, 4, 32),
    "mnist": (85, 10, 0, 3, 2),
}


def load_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def file_number(name: str) -> int:
    base = name.rsplit("/", 1)[-1]
    assert base.startswith("ILSVRC2012_val_") and base.endswith(".JPEG"), base
    return int(base[len("ILSVRC2012_val_"):-len(".JPEG")])


def decode(keys: np.ndarray, num_classes: int) -> set[tuple[int, int]]:
    return {(k // num_classes, k % num_classes) for k in keys.tolist()}


@pytest.fixture(scope="module")
def originals(data_dir: Path, canonical_imagenet_labels: list[int]) -> dict[str, list[int]]:
    """Original labels of each benchmark in canonical order, read without the code under test."""
    return {
        "imagenet": canonical_imagenet_labels,
        "cifar10": np.load(data_dir / "cifar10/original_labels.npy").tolist(),
        "mnist": np.load(data_dir / "mnist/original_labels.npy").tolist(),
    }


# ---------------------------------------------------------------- catalog


@pytest.mark.parametrize(
    ("bench", "slugs"),
    [
        ("imagenet", ["original", "corrected", "corrected-t4", "corrected-t5", "real",
                      "multilabel", "imagenet-m"]),
        ("cifar10", ["original", "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6"]),
        ("mnist", ["original", "corrected"]),
    ],
)
def test_it_lists_the_label_set_slugs_of_the_spec(bench: str, slugs: list[str]) -> None:
    assert [ls.slug for ls in benchmark_spec(bench).label_sets] == slugs
    assert [label_set_spec(bench, slug).slug for slug in slugs] == slugs


def test_it_lists_the_benchmarks_and_image_set_sizes_of_the_spec() -> None:
    assert sorted(BENCHMARKS) == ["cifar10", "imagenet", "mnist"]
    sizes = {b: {s.slug: s.size for s in spec.image_sets} for b, spec in BENCHMARKS.items()}
    assert sizes == {
        "imagenet": {"imagenet-val": 50_000},
        "cifar10": {"cifar10-test": 10_000, "cifar10.1-v4": 2_021, "cifar10.1-v6": 2_000},
        "mnist": {"mnist-test": 10_000},
    }
    assert {b: spec.num_classes for b, spec in BENCHMARKS.items()} == \
        {"imagenet": 1000, "cifar10": 10, "mnist": 10}


def test_it_gives_each_label_set_its_kind_image_set_and_threshold() -> None:
    facts = {(b, ls.slug): (ls.image_set, ls.kind, ls.param_dict.get("threshold"))
             for b, spec in BENCHMARKS.items() for ls in spec.label_sets}
    assert facts == {
        ("imagenet", "original"): ("imagenet-val", "single", None),
        ("imagenet", "corrected"): ("imagenet-val", "single", 3),
        ("imagenet", "corrected-t4"): ("imagenet-val", "single", 4),
        ("imagenet", "corrected-t5"): ("imagenet-val", "single", 5),
        ("imagenet", "real"): ("imagenet-val", "multi", None),
        ("imagenet", "multilabel"): ("imagenet-val", "multi", None),
        ("imagenet", "imagenet-m"): ("imagenet-val", "multi", None),
        ("cifar10", "original"): ("cifar10-test", "single", None),
        ("cifar10", "corrected"): ("cifar10-test", "single", 3),
        ("cifar10", "cifar10h"): ("cifar10-test", "soft", None),
        ("cifar10", "cifar10.1-v4"): ("cifar10.1-v4", "single", None),
        ("cifar10", "cifar10.1-v6"): ("cifar10.1-v6", "single", None),
        ("mnist", "original"): ("mnist-test", "single", None),
        ("mnist", "corrected"): ("mnist-test", "single", 3),
    }


def test_it_rejects_unknown_benchmark_and_label_set_slugs() -> None:
    with pytest.raises(KeyError) as excinfo:
        benchmark_spec("svhn")
    assert excinfo.value.args[0] == "unknown benchmark 'svhn'; known: cifar10, imagenet, mnist"
    with pytest.raises(KeyError) as excinfo:
        label_set_spec("mnist", "real")
    assert excinfo.value.args[0] == "unknown label set 'real' for benchmark 'mnist'"


# ---------------------------------------------------------------- original and simple sets


def test_it_builds_original_labels_equal_to_the_source_files(
    compiled: Compiled, data_dir: Path, originals: dict[str, list[int]]
) -> None:
    with gzip.open(data_dir / "mnist/t10k-labels-idx1-ubyte.gz", "rb") as handle:
        idx = handle.read()
    assert int.from_bytes(idx[:4], "big") == 2049
    assert compiled("mnist", "original").arrays["labels"].tolist() == list(idx[8:])
    for bench in ("imagenet", "cifar10", "mnist"):
        labels = compiled(bench, "original").arrays["labels"]
        assert labels.tolist() == originals[bench]
        assert labels.shape == (SIZES[bench],)


@pytest.mark.parametrize(("slug", "size"), [("cifar10.1-v4", 2_021), ("cifar10.1-v6", 2_000)])
def test_it_builds_the_new_test_sets_from_their_own_labels(
    compiled: Compiled, data_dir: Path, slug: str, size: int
) -> None:
    labelset = compiled("cifar10", slug)
    expected = np.load(data_dir / f"cifar10/{slug.replace('cifar10.1-', 'cifar10.1_')}_labels.npy")
    assert labelset.arrays["labels"].tolist() == expected.tolist()
    assert (labelset.size, len(expected)) == (size, size)
    assert labelset.family == "new_test_set"


def test_it_builds_cifar10h_from_the_human_probabilities(
    compiled: Compiled, data_dir: Path
) -> None:
    probs = compiled("cifar10", "cifar10h").arrays["probs"]
    raw = np.load(data_dir / "cifar10/cifar10h_probs.npy")
    assert probs.dtype == np.float64
    assert probs.shape == (10_000, 10)
    assert probs.tolist() == raw.astype(np.float64).tolist()


# ---------------------------------------------------------------- corrected (SPEC 2)


def categorize(votes: dict[str, int], threshold: int) -> str:
    """SPEC 2, written as an ordered rule list: the first rule whose vote count is reached."""
    rules = [("given", 3, "non_error"), ("guessed", threshold, "correctable"),
             ("both", threshold, "multi_label"), ("neither", threshold, "neither")]
    for key, needed, category in rules:
        if votes.get(key, 0) >= needed:
            return category
    return "non_agreement"


def corrected_set(compiled: Compiled, data_dir: Path, bench: str,
                  threshold: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The catalog set where there is one; otherwise the catalog spec at another threshold."""
    slug = CATALOG_CORRECTED.get((bench, threshold))
    if slug is not None:
        labelset = compiled(bench, slug)
        return dict(labelset.arrays), dict(labelset.meta)
    spec = dataclasses.replace(label_set_spec(bench, "corrected"),
                               params=(("threshold", threshold),))
    return label_set_builders.build(spec, data_dir=data_dir)


@pytest.mark.parametrize("threshold", [3, 4, 5])
@pytest.mark.parametrize("bench", ["imagenet", "cifar10", "mnist"])
def test_it_builds_corrected_labels_by_the_spec_rules(
    compiled: Compiled, data_dir: Path, originals: dict[str, list[int]], bench: str,
    threshold: int
) -> None:
    vote_file, one_based = VOTE_FILES[bench]
    entries = load_json(data_dir / vote_file)
    n = SIZES[bench]
    category: dict[int, str] = {}
    guessed: dict[int, int] = {}
    for entry in entries:
        index = entry["id"] - 1 if one_based else entry["id"]
        category[index] = categorize(entry["mturk"], threshold)
        guessed[index] = entry["our_guessed_label"]
    unknown = {i for i, c in category.items() if c in UNKNOWN}
    correctable = {i for i, c in category.items() if c == "correctable"}
    counts = Counter(category.values())
    expected_counts = {c: counts.get(c, 0) for c in CATEGORIES}
    expected_corrected = [guessed[i] if i in correctable else label
                          for i, label in enumerate(originals[bench])]

    arrays, meta = corrected_set(compiled, data_dir, bench, threshold)

    assert len(category) == len(entries)  # ids are unique
    assert meta == {"threshold": threshold, "flagged": len(entries), "counts": expected_counts,
                    "pruned_size": n - len(unknown), "correctable_size": len(correctable)}
    assert arrays["labels"].tolist() == originals[bench]
    assert arrays["corrected_labels"].tolist() == expected_corrected
    assert set(np.flatnonzero(~arrays["pruned"]).tolist()) == unknown
    assert int(arrays["pruned"].sum()) == n - len(unknown)
    assert set(np.flatnonzero(arrays["correctable"]).tolist()) == correctable
    assert arrays["pruned"].shape == arrays["correctable"].shape == (n,)


@pytest.mark.parametrize("bench", ["imagenet", "cifar10", "mnist"])
def test_it_reproduces_the_published_label_error_counts(
    compiled: Compiled, data_dir: Path, bench: str
) -> None:
    entries = load_json(data_dir / VOTE_FILES[bench][0])
    derived = Counter(categorize(e["mturk"], 3) for e in entries)
    published = dict(zip(CATEGORIES, PUBLISHED_COUNTS[bench], strict=True))
    assert {c: derived.get(c, 0) for c in CATEGORIES} == published
    assert compiled(bench, "corrected").meta["counts"] == published


def test_it_has_no_both_votes_in_the_mnist_file(data_dir: Path) -> None:
    entries = load_json(data_dir / "mnist/cleanlab_mturk.json")
    assert {key for e in entries for key in e["mturk"]} == {"given", "guessed", "neither"}


@pytest.mark.parametrize(
    ("votes", "threshold", "category"),
    [
        ({"given": 5, "guessed": 0, "neither": 0, "both": 0}, 3, "non_error"),
        ({"given": 3, "guessed": 2}, 3, "non_error"),
        ({"given": 3, "guessed": 2}, 5, "non_error"),  # given always needs 3, whatever t
        ({"given": 2, "guessed": 3}, 3, "correctable"),
        ({"given": 2, "guessed": 3}, 4, "non_agreement"),
        ({"given": 1, "guessed": 4}, 4, "correctable"),
        ({"guessed": 5}, 5, "correctable"),
        ({"given": 1, "guessed": 4}, 5, "non_agreement"),
        ({"guessed": 2, "both": 3}, 3, "multi_label"),
        ({"given": 1, "both": 4}, 4, "multi_label"),
        ({"given": 1, "both": 4}, 5, "non_agreement"),
        ({"given": 2, "neither": 3}, 3, "neither"),
        ({"neither": 5}, 5, "neither"),
        ({"given": 1, "guessed": 1, "neither": 3}, 3, "neither"),  # MNIST: no "both" key
        ({"given": 2, "guessed": 2, "neither": 1}, 3, "non_agreement"),
        ({"given": 1, "guessed": 2, "both": 2}, 3, "non_agreement"),
        ({}, 3, "non_agreement"),
        ({"given": 0, "guessed": 0, "neither": 0, "both": 0}, 3, "non_agreement"),
    ],
)
def test_it_categorizes_one_vote_record(votes: dict[str, int], threshold: int,
                                        category: str) -> None:
    assert corrected_categories(votes, threshold) == category


def test_it_builds_a_hand_made_corrected_set() -> None:
    original = np.array([0, 1, 2, 3, 4, 5], dtype=np.int16)
    records = [
        MturkRecord(0, 0, 9, {"given": 4, "guessed": 1}),  # non-error
        MturkRecord(1, 1, 7, {"given": 1, "guessed": 4}),  # correctable -> 7
        MturkRecord(2, 2, 8, {"both": 3, "guessed": 2}),  # multi-label
        MturkRecord(3, 3, 8, {"neither": 3, "given": 2}),  # neither
        MturkRecord(4, 4, 8, {"given": 2, "guessed": 2, "neither": 1}),  # non-agreement
    ]  # example 5 is not flagged
    arrays, meta = build_corrected(original, records, 3)
    assert arrays["labels"].tolist() == [0, 1, 2, 3, 4, 5]
    assert arrays["corrected_labels"].tolist() == [0, 7, 2, 3, 4, 5]
    assert arrays["pruned"].tolist() == [True, True, False, False, False, True]
    assert arrays["correctable"].tolist() == [False, True, False, False, False, False]
    assert meta == {"threshold": 3, "flagged": 5,
                    "counts": {"non_error": 1, "correctable": 1, "multi_label": 1, "neither": 1,
                               "non_agreement": 1},
                    "pruned_size": 3, "correctable_size": 1}
    assert original.tolist() == [0, 1, 2, 3, 4, 5]  # the input is not modified


def test_it_rejects_a_vote_file_that_disagrees_with_the_original_labels() -> None:
    original = np.array([0, 1, 2], dtype=np.int16)
    records = [MturkRecord(0, 0, 1, {"given": 5}), MturkRecord(2, 1, 0, {"guessed": 5})]
    with pytest.raises(DataError) as excinfo:
        build_corrected(original, records, 3)
    assert str(excinfo.value) == ("vote file disagrees with the original label of example 2: "
                                  "1 vs 2 (misaligned order?)")


@pytest.mark.parametrize("threshold", [2, 6])
def test_it_rejects_an_agreement_threshold_outside_3_to_5(threshold: int) -> None:
    with pytest.raises(ValueError) as excinfo:
        build_corrected(np.array([0, 1], dtype=np.int16), [], threshold)
    assert str(excinfo.value) == f"agreement threshold must be 3, 4 or 5, got {threshold}"


def test_it_rejects_a_misaligned_vote_file_on_real_data(
    data_dir: Path, originals: dict[str, list[int]]
) -> None:
    # the ImageNet ids are 1-based: reading them as 0-based shifts every record by one image
    records = datasets.read_mturk(data_dir / "imagenet/cleanlab_mturk.json", one_based=False)
    labels = originals["imagenet"]
    first_bad = next(r for r in records if r.index >= 50_000 or labels[r.index] != r.given)
    assert first_bad.index < 50_000
    with pytest.raises(DataError) as excinfo:
        build_corrected(np.array(labels, dtype=np.int16), records, 3)
    assert str(excinfo.value) == (
        f"vote file disagrees with the original label of example {first_bad.index}: "
        f"{first_bad.given} vs {labels[first_bad.index]} (misaligned order?)")


def test_it_evaluates_the_pruned_set_of_a_corrected_set(
    compiled: Compiled, data_dir: Path
) -> None:
    entries = load_json(data_dir / "cifar10/cleanlab_mturk.json")
    unknown = {e["id"] for e in entries if categorize(e["mturk"], 3) in UNKNOWN}
    labelset = compiled("cifar10", "corrected")
    assert np.flatnonzero(~evaluated_mask(labelset)).tolist() == sorted(unknown)
    assert labelset.summary["evaluated"] == 10_000 - len(unknown)
    assert evaluated_mask(compiled("cifar10", "original")).tolist() == [True] * 10_000


# ---------------------------------------------------------------- ReaL (SPEC 3)


@pytest.fixture(scope="module")
def real_accepted(real_lists: list[list[int]]) -> set[tuple[int, int]]:
    return {(i, c) for i, labels in enumerate(real_lists) for c in labels}


def test_it_includes_exactly_the_images_with_a_non_empty_real_list(
    compiled: Compiled, real_lists: list[list[int]]
) -> None:
    mask = compiled("imagenet", "real").arrays["mask"]
    non_empty = sum(1 for labels in real_lists if labels)
    assert int(mask.sum()) == non_empty
    assert mask.tolist() == [len(labels) > 0 for labels in real_lists]
    assert 50_000 - non_empty == 3_163  # MANIFEST.md: empty lists


def test_it_accepts_exactly_the_real_json_pairs(
    compiled: Compiled, real_accepted: set[tuple[int, int]]
) -> None:
    keys = compiled("imagenet", "real").arrays["accepted_keys"]
    assert keys.dtype == np.int64
    assert keys.tolist() == sorted(set(keys.tolist()))  # sorted and unique
    assert decode(keys, 1000) == real_accepted


def test_it_marks_rated_but_unaccepted_pairs_wrong(
    compiled: Compiled, real_accepted: set[tuple[int, int]],
    real_rated_pairs: set[tuple[int, int]]
) -> None:
    keys = compiled("imagenet", "real").arrays["wrong_keys"]
    expected = real_rated_pairs - real_accepted
    assert keys.tolist() == sorted(set(keys.tolist()))
    assert decode(keys, 1000) == expected


def test_it_counts_the_real_set(
    compiled: Compiled, real_lists: list[list[int]], real_accepted: set[tuple[int, int]],
    real_rated_pairs: set[tuple[int, int]]
) -> None:
    labelset = compiled("imagenet", "real")
    included = sum(1 for labels in real_lists if labels)
    assert labelset.meta == {
        "included": included, "excluded": 50_000 - included,
        "rated_images": len({i for i, _ in real_rated_pairs}),
        "accepted_pairs": len(real_accepted),
        "wrong_pairs": len(real_rated_pairs - real_accepted),
    }
    assert labelset.summary["evaluated"] == included


# ---------------------------------------------------------------- compiled form and cache


def test_it_loads_the_second_compile_from_the_cache_file(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = label_set_spec("cifar10", "corrected")
    first = compile_label_set(spec, data_dir=data_dir, cache_dir=tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1
    assert re.fullmatch(r"cifar10-corrected-[0-9a-f]{32}\.npz", files[0])

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("label_set_builders.build was called although the cache is fresh")

    monkeypatch.setattr(label_set_builders, "build", no_build)
    second = compile_label_set(spec, data_dir=data_dir, cache_dir=tmp_path)
    assert second.content_hash == first.content_hash
    assert second.meta == first.meta
    assert sorted(second.arrays) == sorted(first.arrays)
    for name in first.arrays:
        assert second.arrays[name].tolist() == first.arrays[name].tolist()
        assert second.arrays[name].dtype == first.arrays[name].dtype
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    # without a cache directory it must build again
    with pytest.raises(AssertionError):
        compile_label_set(spec, data_dir=data_dir)


def test_it_returns_read_only_arrays(data_dir: Path, tmp_path: Path) -> None:
    spec = label_set_spec("mnist", "corrected")
    fresh = compile_label_set(spec, data_dir=data_dir, cache_dir=tmp_path)
    cached = compile_label_set(spec, data_dir=data_dir, cache_dir=tmp_path)
    for labelset in (fresh, cached):
        for name, array in labelset.arrays.items():
            assert array.flags.writeable is False, name
        with pytest.raises(ValueError):
            labelset.arrays["labels"][0] = 1


def test_it_round_trips_a_compiled_set_through_save_and_verified_load(
    compiled: Compiled, tmp_path: Path
) -> None:
    original = compiled("imagenet", "real")
    path = tmp_path / "real.npz"
    save_compiled(original, path)
    for verify in (True, False):
        loaded = load_compiled(path, verify=verify)
        assert loaded.content_hash == original.content_hash
        assert (loaded.slug, loaded.benchmark, loaded.image_set, loaded.kind, loaded.family,
                loaded.num_classes, loaded.size) == \
            ("real", "imagenet", "imagenet-val", "multi", "real", 1000, 50_000)
        assert loaded.meta == original.meta
        assert sorted(loaded.arrays) == ["accepted_keys", "mask", "wrong_keys"]
        for name, array in original.arrays.items():
            assert loaded.arrays[name].dtype == array.dtype
            assert loaded.arrays[name].tolist() == array.tolist()
            assert loaded.arrays[name].flags.writeable is False
    with np.load(path, allow_pickle=False) as z:  # no pickled objects inside
        assert sorted(z.files) == ["__header__", "accepted_keys", "mask", "wrong_keys"]
        assert all(z[name].dtype != object for name in z.files)


def _rewrite(path: Path, change: Callable[[dict[str, np.ndarray]], None]) -> None:
    with np.load(path, allow_pickle=False) as z:
        payload = {name: z[name].copy() for name in z.files}
    change(payload)
    with open(path, "wb") as handle:
        np.savez(handle, **payload)  # type: ignore[arg-type]


def _flip_first_label(payload: dict[str, np.ndarray]) -> None:
    payload["labels"][0] = (payload["labels"][0] + 1) % 10


def _edit_meta(payload: dict[str, np.ndarray]) -> None:
    header = json.loads(payload["__header__"].tobytes())
    header["meta"]["pruned_size"] += 1
    payload["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)


@pytest.mark.parametrize("change", [_flip_first_label, _edit_meta])
def test_it_fails_verification_of_a_tampered_file(
    compiled: Compiled, tmp_path: Path, change: Callable[[dict[str, np.ndarray]], None]
) -> None:
    path = tmp_path / "cifar10-corrected.npz"
    save_compiled(compiled("cifar10", "corrected"), path)
    _rewrite(path, change)
    with pytest.raises(DataError) as excinfo:
        load_compiled(path, verify=True)
    assert str(excinfo.value) == f"{path}: content does not match its hash"


def _linked_data_dir(data_dir: Path, root: Path, copied: str) -> Path:
    """A data directory of symlinks to the real files, except `copied`, which is a copy."""
    for source in data_dir.rglob("*"):
        if source.is_dir():
            continue
        relative = source.relative_to(data_dir)
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.as_posix() == copied:
            shutil.copyfile(source, target)
        else:
            target.symlink_to(source)
    return root


def test_it_hashes_content_so_a_changed_label_changes_the_hash(
    compiled: Compiled, data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    name = "cifar10/original_labels.npy"
    same = _linked_data_dir(data_dir, tmp_path / "same", name)
    changed = _linked_data_dir(data_dir, tmp_path / "changed", name)
    flagged = {e["id"] for e in load_json(data_dir / "cifar10/cleanlab_mturk.json")}
    index = next(i for i in range(10_000) if i not in flagged)  # keeps the vote file valid
    labels = np.load(changed / name)
    labels[index] = (labels[index] + 1) % 10
    np.save(changed / name, labels)

    for slug in ("original", "corrected"):
        spec = label_set_spec("cifar10", slug)
        real = compiled("cifar10", slug)
        copy = compile_label_set(spec, data_dir=same, cache_dir=cache_dir)
        edited = compile_label_set(spec, data_dir=changed, cache_dir=cache_dir)
        assert copy.content_hash == real.content_hash  # same content, other path: same hash
        assert edited.content_hash != real.content_hash
        differs = np.flatnonzero(edited.arrays["labels"] != real.arrays["labels"]).tolist()
        assert differs == [index]


def test_it_lists_exactly_the_missing_files(data_dir: Path, tmp_path: Path) -> None:
    spec = label_set_spec("imagenet", "real")
    assert missing_files(spec, data_dir=data_dir) == []
    (tmp_path / "imagenet").mkdir()
    (tmp_path / "imagenet/cleanlab_original_labels.npy").symlink_to(
        data_dir / "imagenet/cleanlab_original_labels.npy")
    (tmp_path / "imagenet/real.json").symlink_to(data_dir / "imagenet/real.json")
    assert missing_files(spec, data_dir=tmp_path) == [
        "imagenet/cleanlab_index_to_filepath.json", "imagenet/real_scores.npz"]
    assert missing_files(label_set_spec("mnist", "corrected"), data_dir=tmp_path) == [
        "mnist/original_labels.npy", "mnist/cleanlab_mturk.json"]


def test_it_lists_a_missing_multilabel_file(data_dir: Path, tmp_path: Path) -> None:
    spec = label_set_spec("imagenet", "multilabel")
    absent = tmp_path / "human_accuracy_v3.0.0.json"
    assert missing_files(spec, data_dir=data_dir) == []
    assert missing_files(spec, data_dir=data_dir, multilabel_file=absent) == [str(absent)]
    # the multi-label file is ignored by label sets that do not read it
    assert missing_files(label_set_spec("imagenet", "original"), data_dir=data_dir,
                         multilabel_file=absent) == []


def test_it_refuses_to_compile_with_a_missing_file_and_names_it(
    data_dir: Path, tmp_path: Path
) -> None:
    root = _linked_data_dir(data_dir, tmp_path / "data", "")
    (root / "cifar10/cleanlab_mturk.json").unlink()
    with pytest.raises(DataError) as excinfo:
        compile_label_set(label_set_spec("cifar10", "corrected"), data_dir=root,
                          cache_dir=tmp_path / "cache")
    assert str(excinfo.value) == \
        "label set cifar10/corrected is missing files: cifar10/cleanlab_mturk.json"
    assert not (tmp_path / "cache").exists()


def test_it_needs_a_multilabel_file_for_the_multilabel_sets(data_dir: Path) -> None:
    with pytest.raises(DataError) as excinfo:
        compile_label_set(label_set_spec("imagenet", "multilabel"), data_dir=data_dir)
    assert str(excinfo.value) == "label set 'multilabel' needs a multi-label file"


def _fields(slug: str) -> dict[str, Any]:
    return {"slug": slug, "benchmark": "cifar10", "image_set": "cifar10-test",
            "kind": "single", "family": "original", "num_classes": 10, "size": 4}


def test_it_gives_equal_content_an_equal_hash_whatever_the_slug() -> None:
    labels = np.array([1, 2, 3, 4], dtype=np.int16)
    a = make_compiled(_fields("a"), {"labels": labels.copy()}, {"note": 1})
    b = make_compiled(_fields("b"), {"labels": labels.copy()}, {"note": 1})
    assert (a.slug, b.slug) == ("a", "b")
    assert a.content_hash == b.content_hash
    assert re.fullmatch(r"[0-9a-f]{64}", a.content_hash)
    other_label = make_compiled(_fields("a"), {"labels": np.array([1, 2, 3, 5], np.int16)},
                                {"note": 1})
    other_meta = make_compiled(_fields("a"), {"labels": labels.copy()}, {"note": 2})
    other_size = make_compiled({**_fields("a"), "size": 5}, {"labels": labels.copy()},
                               {"note": 1})
    hashes = {a.content_hash, other_label.content_hash, other_meta.content_hash,
              other_size.content_hash}
    assert len(hashes) == 4


def test_it_gives_a_catalog_set_the_hash_of_its_content(compiled: Compiled) -> None:
    labelset = compiled("mnist", "corrected")
    fields = {"slug": "renamed", "benchmark": "mnist", "image_set": "mnist-test",
              "kind": "single", "family": "corrected", "num_classes": 10, "size": 10_000}
    arrays = {name: np.array(array) for name, array in labelset.arrays.items()}
    again = make_compiled(fields, arrays, dict(labelset.meta))
    assert again.content_hash == labelset.content_hash


def test_it_rejects_a_compiled_set_that_lacks_an_array() -> None:
    with pytest.raises(ValueError) as excinfo:
        make_compiled({**_fields("x"), "family": "corrected"},
                      {"labels": np.array([0, 1, 2, 3])}, {})
    assert str(excinfo.value) == ("label set 'x' lacks arrays "
                                  "['correctable', 'corrected_labels', 'pruned']")
