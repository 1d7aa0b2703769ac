"""What the built-in bundles declare, and sets built straight from files (docs/metrics.md §2,
§4, §7, §8)."""

# Expected values on the real data are derived here with plain Python loops over the public files.

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from tests.workers.scoring.support import SIZES, Compiled, decode
from workers.scoring.bundles import builtin_bundle, builtin_slugs, label_set_identity

# The three benchmarks whose label sets label_set_builders builds from files.
BENCHMARKS = {slug: builtin_bundle(slug) for slug in ("imagenet", "cifar10", "mnist")}

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
def test_it_lists_the_label_set_slugs_of_the_bundle(bench: str, slugs: list[str]) -> None:
    assert [ls.slug for ls in builtin_bundle(bench).label_sets] == slugs


def test_it_lists_the_benchmarks_and_example_set_sizes_of_the_bundles() -> None:
    assert builtin_slugs() == ("20news", "caltech256", "cifar10", "cifar100", "imagenet", "imdb",
                               "mnist")
    sizes = {b: {s.slug: s.size for s in bundle.example_sets} for b, bundle in BENCHMARKS.items()}
    assert sizes == {
        "imagenet": {"imagenet-val": 50_000},
        "cifar10": {"cifar10-test": 10_000, "cifar10.1-v4": 2_021, "cifar10.1-v6": 2_000},
        "mnist": {"mnist-test": 10_000},
    }
    assert {b: bundle.classes.count for b, bundle in BENCHMARKS.items()} == \
        {"imagenet": 1000, "cifar10": 10, "mnist": 10}


def test_it_gives_each_label_set_its_kind_example_set_and_threshold() -> None:
    facts = {(b, ls.slug): (ls.example_set, label_set_identity(bundle, ls)["kind"],
                            ls.fields.params().get("threshold"))
             for b, bundle in BENCHMARKS.items() for ls in bundle.label_sets}
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
        builtin_bundle("svhn")
    assert excinfo.value.args[0] == ("unknown benchmark 'svhn'; built in: 20news, caltech256, "
                                     "cifar10, cifar100, imagenet, imdb, mnist")


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


# ---------------------------------------------------------------- ReaL (docs/metrics.md §4)


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
