"""Tests for the compiled form of a label set: content hash, cache, save/load and missing files
(compiled from the built-in bundles, benchmarks/*.toml)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.bundles.bundle_files import write_bundle
from tests.workers.scoring.support import Compiled, compile_builtin, load_json
from workers.scoring.bundles import (
    BundleData,
    BundleError,
    builtin_bundle,
    compile_bundle_label_set,
    compiler,
    missing_sources,
    read_bundle,
)
from workers.scoring.datasets import DataError
from workers.scoring.label_set_builders import (
    load_compiled,
    make_compiled,
    save_compiled,
)

# ---------------------------------------------------------------- compiled form and cache


def test_it_loads_the_second_compile_from_the_cache_file(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = compile_builtin("cifar10", "corrected", data_dir=data_dir, cache_dir=tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1
    assert re.fullmatch(r"bundle-cifar10-corrected-[0-9a-f]{32}\.npz", files[0])

    def no_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("a label file was read although the cache is fresh")

    # the corrected family builds from the original labels and the vote records
    monkeypatch.setattr(BundleData, "read_labels", no_read)
    monkeypatch.setattr(BundleData, "vote_records", no_read)
    second = compile_builtin("cifar10", "corrected", data_dir=data_dir, cache_dir=tmp_path)
    assert second.content_hash == first.content_hash
    assert second.meta == first.meta
    assert sorted(second.arrays) == sorted(first.arrays)
    for name in first.arrays:
        assert second.arrays[name].tolist() == first.arrays[name].tolist()
        assert second.arrays[name].dtype == first.arrays[name].dtype
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    # without a cache directory it must build again
    with pytest.raises(AssertionError):
        compile_builtin("cifar10", "corrected", data_dir=data_dir)


def test_it_returns_read_only_arrays(data_dir: Path, tmp_path: Path) -> None:
    fresh = compile_builtin("mnist", "corrected", data_dir=data_dir, cache_dir=tmp_path)
    cached = compile_builtin("mnist", "corrected", data_dir=data_dir, cache_dir=tmp_path)
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
        assert (loaded.slug, loaded.benchmark, loaded.example_set, loaded.kind, loaded.family,
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


CIFAR10_CORRECTED_FILES = ("cifar10/original_labels.npy", "cifar10/cleanlab_mturk.json")


def _copied_data_dir(data_dir: Path, root: Path, names: tuple[str, ...]) -> Path:
    """A data directory holding copies of the named files only (a bundle refuses a link that
    leads out of its root, so no links to the real files)."""
    for name in names:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / name, target)
    return root


def test_it_hashes_content_so_a_changed_label_changes_the_hash(
    compiled: Compiled, data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    name = "cifar10/original_labels.npy"
    same = _copied_data_dir(data_dir, tmp_path / "same", CIFAR10_CORRECTED_FILES)
    changed = _copied_data_dir(data_dir, tmp_path / "changed", CIFAR10_CORRECTED_FILES)
    flagged = {e["id"] for e in load_json(data_dir / "cifar10/cleanlab_mturk.json")}
    index = next(i for i in range(10_000) if i not in flagged)  # keeps the vote file valid
    labels = np.load(changed / name)
    labels[index] = (labels[index] + 1) % 10
    np.save(changed / name, labels)

    for slug in ("original", "corrected"):
        real = compiled("cifar10", slug)
        copy = compile_builtin("cifar10", slug, data_dir=same, cache_dir=cache_dir)
        edited = compile_builtin("cifar10", slug, data_dir=changed, cache_dir=cache_dir)
        assert copy.content_hash == real.content_hash  # same content, other path: same hash
        assert edited.content_hash != real.content_hash
        differs = np.flatnonzero(edited.arrays["labels"] != real.arrays["labels"]).tolist()
        assert differs == [index]


def _missing(benchmark: str, slug: str, data_dir: Path,
             multilabel_file: Path | None = None) -> list[str]:
    data = BundleData(builtin_bundle(benchmark), data_dir=data_dir,
                      sources={"multilabel_file": multilabel_file})
    return missing_sources(data, data.bundle.label_set(slug))


def test_it_lists_exactly_the_missing_files(data_dir: Path, tmp_path: Path) -> None:
    assert _missing("imagenet", "real", data_dir) == []
    (tmp_path / "imagenet").mkdir()
    # present is all that counts here (files are read only when the set is built)
    (tmp_path / "imagenet/cleanlab_original_labels.npy").write_bytes(b"")
    (tmp_path / "imagenet/real.json").write_bytes(b"")
    assert _missing("imagenet", "real", tmp_path) == [
        "imagenet/cleanlab_index_to_filepath.json", "imagenet/real_scores.npz"]
    assert _missing("mnist", "corrected", tmp_path) == [
        "mnist/original_labels.npy", "mnist/cleanlab_mturk.json"]


def test_it_lists_a_missing_multilabel_file(data_dir: Path, tmp_path: Path) -> None:
    absent = tmp_path / "human_accuracy_v3.0.0.json"
    present = tmp_path / "present.json"
    present.write_text("{}")
    assert _missing("imagenet", "multilabel", data_dir, present) == []
    assert _missing("imagenet", "multilabel", data_dir, absent) == [str(absent)]
    assert _missing("imagenet", "multilabel", data_dir) == ["setting multilabel_file"]
    # the multi-label file is ignored by label sets that do not read it
    assert _missing("imagenet", "original", data_dir, absent) == []


def test_it_refuses_to_compile_with_a_missing_file_and_names_it(
    data_dir: Path, tmp_path: Path
) -> None:
    root = _copied_data_dir(data_dir, tmp_path / "data", CIFAR10_CORRECTED_FILES)
    (root / "cifar10/cleanlab_mturk.json").unlink()
    with pytest.raises(BundleError) as excinfo:
        compile_builtin("cifar10", "corrected", data_dir=root, cache_dir=tmp_path / "cache")
    assert (excinfo.value.code, excinfo.value.file, excinfo.value.field) == (
        "missing_file", "cifar10/cleanlab_mturk.json", "label_sets.corrected")
    assert excinfo.value.message == "label set 'corrected' lacks: cifar10/cleanlab_mturk.json"
    assert not (tmp_path / "cache").exists()


def test_it_needs_a_multilabel_file_for_the_multilabel_sets(data_dir: Path) -> None:
    data = BundleData(builtin_bundle("imagenet"), data_dir=data_dir)
    with pytest.raises(BundleError) as excinfo:
        compile_bundle_label_set(data, "multilabel")
    assert (excinfo.value.code, excinfo.value.field) == ("not_configured",
                                                         "label_sets.multilabel")
    assert excinfo.value.message == "label set 'multilabel' lacks: setting multilabel_file"


def _fields(slug: str) -> dict[str, Any]:
    return {"slug": slug, "benchmark": "cifar10", "example_set": "cifar10-test",
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
    fields = {"slug": "renamed", "benchmark": "mnist", "example_set": "mnist-test",
              "kind": "single", "family": "corrected", "num_classes": 10, "size": 10_000}
    arrays = {name: np.array(array) for name, array in labelset.arrays.items()}
    again = make_compiled(fields, arrays, dict(labelset.meta))
    assert again.content_hash == labelset.content_hash


def test_it_rejects_a_compiled_set_whose_builder_lacks_a_family_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The compiler checks a build against its family's arrays: the toy bundle's original
    # labels, compiled as a family that also declares `pruned` and `correctable`.
    bundle = read_bundle(write_bundle(tmp_path / "toy"))
    original = compiler.family_of(bundle.label_set("original"))
    demanding = dataclasses.replace(original, arrays=("labels", "pruned", "correctable"))
    monkeypatch.setattr(compiler, "family_of", lambda ls: demanding)
    with pytest.raises(ValueError) as excinfo:
        compile_bundle_label_set(BundleData(bundle, data_dir=tmp_path), "original",
                                 cache_dir=tmp_path / "cache")
    assert str(excinfo.value) == ("label set 'original': the original builder gave no "
                                  "['correctable', 'pruned']")
    assert not (tmp_path / "cache").exists()
