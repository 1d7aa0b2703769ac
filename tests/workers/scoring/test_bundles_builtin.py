"""The bundles of the three built-in benchmarks (benchmarks/*.toml) against catalog.py: the
same specs field by field, and every label set compiled from the bundle with the content hash
(and metadata) that label_set_builders.compile_label_set gives from catalog.py today."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from workers.scoring import catalog
from workers.scoring.bundles import (
    BundleData,
    benchmark_spec_from_bundle,
    builtin_bundle_paths,
    compile_bundle,
    compile_bundle_label_set,
    read_bundle,
)
from workers.scoring.label_set_builders import compile_label_set

BUILTIN = ("imagenet", "cifar10", "mnist")


def bundle_path(slug: str) -> Path:
    return PROJECT_ROOT / "benchmarks" / f"{slug}.toml"


def test_it_keeps_seven_bundles_in_the_repository() -> None:
    assert [p.name for p in builtin_bundle_paths()] == [
        "20news.toml", "caltech256.toml", "cifar10.toml", "cifar100.toml", "imagenet.toml",
        "imdb.toml", "mnist.toml"]
    assert all(p.parent == PROJECT_ROOT / "benchmarks" for p in builtin_bundle_paths())


@pytest.mark.parametrize("slug", BUILTIN)
def test_it_gives_the_catalog_specs_field_by_field(slug: str) -> None:
    ours = benchmark_spec_from_bundle(read_bundle(bundle_path(slug)))
    theirs = catalog.benchmark_spec(slug)
    for field in ("slug", "name", "num_classes", "main_image_set"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert [s.slug for s in ours.image_sets] == [s.slug for s in theirs.image_sets]
    for mine, reference in zip(ours.image_sets, theirs.image_sets, strict=True):
        assert dataclasses.asdict(mine) == dataclasses.asdict(reference)
    assert [s.slug for s in ours.label_sets] == [s.slug for s in theirs.label_sets]
    for mine, reference in zip(ours.label_sets, theirs.label_sets, strict=True):
        for field in dataclasses.fields(reference):
            assert getattr(mine, field.name) == getattr(reference, field.name), \
                (mine.slug, field.name)
    assert ours == theirs  # nothing left over that the field loop missed


@pytest.mark.slow
@pytest.mark.parametrize("slug", BUILTIN)
def test_it_compiles_every_label_set_to_the_catalog_content_hash(
    slug: str, data_dir: Path, tmp_path: Path
) -> None:
    ours = compile_bundle(read_bundle(bundle_path(slug)), data_dir=data_dir,
                          cache_dir=tmp_path / "bundle-cache")
    expected = [s.slug for s in catalog.benchmark_spec(slug).label_sets
                if s.optional_source is None]
    assert list(ours) == expected  # the multi-label sets are left out while unconfigured
    for ls_slug, compiled in ours.items():
        reference = compile_label_set(catalog.label_set_spec(slug, ls_slug), data_dir=data_dir)
        assert compiled.content_hash == reference.content_hash, ls_slug
        assert dict(compiled.meta) == dict(reference.meta), ls_slug
        assert (compiled.kind, compiled.family, compiled.size, compiled.num_classes) == \
            (reference.kind, reference.family, reference.size, reference.num_classes)
        assert sorted(compiled.arrays) == sorted(reference.arrays)
        for name, array in reference.arrays.items():
            np.testing.assert_array_equal(compiled.arrays[name], array)
            assert compiled.arrays[name].dtype == array.dtype, (ls_slug, name)


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
    for ls_slug in ("multilabel", "imagenet-m"):
        ours = compile_bundle_label_set(data, ls_slug)
        reference = compile_label_set(catalog.label_set_spec("imagenet", ls_slug),
                                      data_dir=data_dir, multilabel_file=multilabel)
        assert ours.content_hash == reference.content_hash, ls_slug
        assert dict(ours.meta) == dict(reference.meta)
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
