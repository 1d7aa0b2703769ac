"""The bundles of the three benchmarks catalog.py declared before bundles (benchmarks/*.toml):
every fact of the specs it declared (catalog_specs.json, written from catalog.py before its
constants were deleted; the spec classes are gone since, 2026-11), field by field, from what
now carries each (the catalog rows of leaderboard/catalog/bundle_definition.py, or the bundle),
every label set compiled from the bundle with the content
hash it had then (CONTENT_HASHES); the multi-label sets, from a small file, with the hash and
metadata the deleted legacy builders gave for it (recorded before they were deleted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leaderboard.catalog.bundle_definition import label_set_row
from tests.helpers import PROJECT_ROOT
from workers.scoring.bundles import (
    Bundle,
    BundleData,
    builtin_bundle_paths,
    compile_bundle,
    compile_bundle_label_set,
    label_set_files,
    label_set_identity,
    read_bundle,
)
from workers.scoring.bundles.builders import optional_source

BUILTIN = ("imagenet", "cifar10", "mnist")
# What catalog.py declared (dataclasses.asdict of its BenchmarkSpec; each label set with its
# benchmark's class count and its example set's size, which its LabelSetSpec carried later).
# Two families have been renamed since (2026-11) from the dataset that first had them to what
# they are; the specs are compared under the new names.
FAMILY_RENAMES = {"cifar10h": "soft", "imagenet_m": "subset"}
CATALOG_SPECS = json.loads((Path(__file__).parent / "catalog_specs.json").read_text())
for _spec in CATALOG_SPECS.values():
    for _ls in _spec["label_sets"]:
        _ls["family"] = FAMILY_RENAMES.get(_ls["family"], _ls["family"])
# The content hash of every label set as catalog.py compiled it (versions stored on servers
# name these: they must never change).
CONTENT_HASHES = {
    ("imagenet", "original"): "9e2e23dbb0d641b5a43e3353b5fccf61fe9c82e69e5b7633a501f80c8ee132a0",
    ("imagenet", "corrected"): "80a4777a7e9d2a14181ee7cb601fea743c1b73430aa4df98a934c0757c48cde7",
    ("imagenet", "corrected-t4"):
        "fd544c53dd1a4c9015bbfe5319a6d7afd81be87a53bd8a488f15ecf95e2a2e07",
    ("imagenet", "corrected-t5"):
        "b1d934da1e0e74c965ccfedafd82365329858d6765a39e970001e89c40f748e3",
    ("imagenet", "real"): "9f5786386dc557dcff1a60e07efdd5a4c84813eacdb89911c03ea8d4aeb0a50c",
    ("cifar10", "original"): "304901993fb2298e641f6701da2a8fb2cff27105e3cb8889f3372bde701f7b68",
    ("cifar10", "corrected"): "174fdd39a04d50836e1ed2aa0207d88e00abaed76e3c0f2be1b6a9a2a090838b",
    ("cifar10", "cifar10h"): "2b8aa81a754c1f577a8358c14bcb772c6d1726b90130ae53dbf188bd96bc24e1",
    ("cifar10", "cifar10.1-v4"):
        "59aeb17ab8df8d428f82da130b3084bcec1747cd7b052d6306401a3e17024d75",
    ("cifar10", "cifar10.1-v6"):
        "333b0aa1d6e689498818507edae897d6a8a7ada375f04d20c30f4497c94970d5",
    ("mnist", "original"): "c63affd319dc29873f2033506e756e263f716a8a1766c6c439fb021f310ee513",
    ("mnist", "corrected"): "a773a4ef13b5933029a132462e582e5ac7b9211e326d81abe9daa84a08b3943b",
}
# The multi-label sets of `_multilabel_file` as the legacy builders (label_set_builders'
# compile_label_set with that file) compiled them, recorded before those were deleted:
# (content hash, meta).
MULTILABEL_FILE_COMPILED = {
    "multilabel": ("14ef9ef6529db2ab09c2eba8e06005d81950781b5c4e82584fefb90fadf0d73e",
                   {"annotated": 10, "problematic": 1, "included": 9, "organism_included": 5}),
    "imagenet-m": ("f60eb0077431806d6027b64818643a5861cdcd0f3a7971c7bf926900bb2f4e5b",
                   {"included": 2}),
}


def _as_json(value: object) -> object:
    return json.loads(json.dumps(value))


def bundle_path(slug: str) -> Path:
    return PROJECT_ROOT / "benchmarks" / f"{slug}.toml"


def _as_recorded(bundle: Bundle) -> dict[str, Any]:
    """The facts catalog.py's spec held, in its layout, each from what carries it now: a label
    set's catalog row (its example set, kind, family, name, description, citation, params), the
    bundle for the rest (the files a label set reads, the setting it needs, what its compiled
    labels are checked against, the benchmark's and the example sets' own fields). The keys
    are catalog.py's (`image_set`, `main_image_set`, `image_sets`), as catalog_specs.json
    recorded them."""
    label_sets = []
    for ls in bundle.label_sets:
        row, identity = label_set_row(bundle, ls), label_set_identity(bundle, ls)
        label_sets.append({
            "slug": ls.slug, "benchmark": bundle.slug, "image_set": row["example_set"],
            "kind": row["kind"], "family": row["family"], "name": row["name"],
            "description": row["description"], "citation": row["citation"],
            "files": list(label_set_files(bundle, ls)),
            # catalog.py kept the plain values alone: not the vote vocabularies ("answers")
            "params": [[key, value] for key, value in row["params"].items()
                       if isinstance(value, int | float | str | bool)],
            "optional_source": optional_source(bundle, ls),
            "num_classes": identity["num_classes"], "size": identity["size"],
        })
    return {
        "slug": bundle.slug, "name": bundle.name, "num_classes": bundle.classes.count,
        "main_image_set": bundle.main_example_set,
        "image_sets": [{"slug": s.slug, "benchmark": bundle.slug, "name": s.name,
                        "size": s.size, "description": s.description}
                       for s in bundle.example_sets],
        "label_sets": label_sets,
    }


def test_it_keeps_seven_bundles_in_the_repository() -> None:
    assert [p.name for p in builtin_bundle_paths()] == [
        "20news.toml", "caltech256.toml", "cifar10.toml", "cifar100.toml", "imagenet.toml",
        "imdb.toml", "mnist.toml"]
    assert all(p.parent == PROJECT_ROOT / "benchmarks" for p in builtin_bundle_paths())


@pytest.mark.parametrize("slug", BUILTIN)
def test_it_keeps_every_fact_of_the_catalog_specs_field_by_field(slug: str) -> None:
    ours = _as_json(_as_recorded(read_bundle(bundle_path(slug))))
    theirs = CATALOG_SPECS[slug]
    assert isinstance(ours, dict)
    for field in ("slug", "name", "num_classes", "main_image_set"):
        assert ours[field] == theirs[field], field
    assert ours["image_sets"] == theirs["image_sets"]
    assert [s["slug"] for s in ours["label_sets"]] == [s["slug"] for s in theirs["label_sets"]]
    for mine, reference in zip(ours["label_sets"], theirs["label_sets"], strict=True):
        for field in reference:
            assert mine[field] == reference[field], (mine["slug"], field)
    assert ours == theirs  # nothing left over that the field loop missed


@pytest.mark.slow
@pytest.mark.parametrize("slug", BUILTIN)
def test_it_compiles_every_label_set_to_the_catalog_content_hash(
    slug: str, data_dir: Path, tmp_path: Path
) -> None:
    ours = compile_bundle(read_bundle(bundle_path(slug)), data_dir=data_dir,
                          cache_dir=tmp_path / "bundle-cache")
    expected = [s["slug"] for s in CATALOG_SPECS[slug]["label_sets"]
                if s["optional_source"] is None]
    assert list(ours) == expected  # the multi-label sets are left out while unconfigured
    specs = {s["slug"]: s for s in CATALOG_SPECS[slug]["label_sets"]}
    for ls_slug, compiled in ours.items():
        assert compiled.content_hash == CONTENT_HASHES[slug, ls_slug], ls_slug
        spec = specs[ls_slug]
        assert (compiled.kind, compiled.family, compiled.size, compiled.num_classes) == (
            spec["kind"], spec["family"], spec["size"], spec["num_classes"]), ls_slug


def _multilabel_file(path: Path, data_dir: Path) -> Path:
    """A small file in the human_accuracy_v3.0.0.json layout (MANIFEST.md): annotations of
    ten images, one problematic, two ImageNet-M images, and an ImageNetV2 entry to skip."""
    wnids = [c["wnid"] for c in json.loads((data_dir / "imagenet/class_info.json").read_text())]
    name = "ILSVRC2012_val_{:08d}.JPEG".format
    annots = {name(n): {"correct": [wnids[n % 1000]], "wrong": [wnids[(n + 1) % 1000]]}
              for n in range(1, 11)}
    annots[name(3)]["unclear"] = [wnids[250]]  # 250 collapses into 248 (the built-in map)
    annots["imagenetv2/x.jpeg"] = {"correct": [wnids[0]]}
    path.write_text(json.dumps({"initial_annots": annots,
                                "problematic_images": {name(4): ["x"]},
                                "imagenet_m": [name(2), name(7)]}))
    return path


@pytest.mark.slow
def test_it_compiles_the_multilabel_sets_to_the_catalog_content_hash_when_configured(
    data_dir: Path, tmp_path: Path
) -> None:
    multilabel = _multilabel_file(tmp_path / "human_accuracy_v3.0.0.json", data_dir)
    data = BundleData(read_bundle(bundle_path("imagenet")), data_dir=data_dir,
                      sources={"multilabel_file": multilabel})
    for ls_slug, (content_hash, meta) in MULTILABEL_FILE_COMPILED.items():
        ours = compile_bundle_label_set(data, ls_slug)
        assert ours.content_hash == content_hash, ls_slug
        assert dict(ours.meta) == meta, ls_slug
    assert int(compile_bundle_label_set(data, "imagenet-m").arrays["mask"].sum()) == 2


@pytest.mark.slow
def test_it_reads_a_warm_cache_to_the_same_content_and_rebuilds_when_a_definition_changes(
    data_dir: Path, tmp_path: Path
) -> None:
    bundle = read_bundle(bundle_path("mnist"))
    cold = compile_bundle(bundle, data_dir=data_dir, cache_dir=tmp_path)
    cached = sorted(p.name for p in tmp_path.iterdir())
    assert [n.rsplit("-", 1)[0] for n in cached] == ["bundle-mnist-corrected",
                                                     "bundle-mnist-original"]
    warm = compile_bundle(bundle, data_dir=data_dir, cache_dir=tmp_path)
    assert {s: c.content_hash for s, c in warm.items()} == \
        {s: c.content_hash for s, c in cold.items()}
    # The same vote file read with a threshold of 4: a new cache entry, a new hash.
    text = bundle_path("mnist").read_text().replace("thresholds = [3]", "thresholds = [4]")
    changed = tmp_path / "changed" / "mnist.toml"
    changed.parent.mkdir()
    changed.write_text(text)
    stricter = compile_bundle(read_bundle(changed), data_dir=data_dir, cache_dir=tmp_path)
    assert stricter["corrected"].content_hash != cold["corrected"].content_hash
    assert stricter["corrected"].meta["threshold"] == 4
    assert len(list(tmp_path.glob("*.npz"))) == 3
