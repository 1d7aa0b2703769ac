"""Tests for the compiled form of a label set: content hash, cache, save/load and missing files."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workers.scoring.support import Compiled, load_json
from workers.scoring import label_set_builders
from workers.scoring.bundles import builtin_label_set_spec
from workers.scoring.datasets import DataError
from workers.scoring.label_set_builders import (
    compile_label_set,
    load_compiled,
    make_compiled,
    missing_files,
    save_compiled,
)

# ---------------------------------------------------------------- compiled form and cache


def test_it_loads_the_second_compile_from_the_cache_file(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = builtin_label_set_spec("cifar10", "corrected")
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
    spec = builtin_label_set_spec("mnist", "corrected")
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
        spec = builtin_label_set_spec("cifar10", slug)
        real = compiled("cifar10", slug)
        copy = compile_label_set(spec, data_dir=same, cache_dir=cache_dir)
        edited = compile_label_set(spec, data_dir=changed, cache_dir=cache_dir)
        assert copy.content_hash == real.content_hash  # same content, other path: same hash
        assert edited.content_hash != real.content_hash
        differs = np.flatnonzero(edited.arrays["labels"] != real.arrays["labels"]).tolist()
        assert differs == [index]


def test_it_lists_exactly_the_missing_files(data_dir: Path, tmp_path: Path) -> None:
    spec = builtin_label_set_spec("imagenet", "real")
    assert missing_files(spec, data_dir=data_dir) == []
    (tmp_path / "imagenet").mkdir()
    (tmp_path / "imagenet/cleanlab_original_labels.npy").symlink_to(
        data_dir / "imagenet/cleanlab_original_labels.npy")
    (tmp_path / "imagenet/real.json").symlink_to(data_dir / "imagenet/real.json")
    assert missing_files(spec, data_dir=tmp_path) == [
        "imagenet/cleanlab_index_to_filepath.json", "imagenet/real_scores.npz"]
    assert missing_files(builtin_label_set_spec("mnist", "corrected"), data_dir=tmp_path) == [
        "mnist/original_labels.npy", "mnist/cleanlab_mturk.json"]


def test_it_lists_a_missing_multilabel_file(data_dir: Path, tmp_path: Path) -> None:
    spec = builtin_label_set_spec("imagenet", "multilabel")
    absent = tmp_path / "human_accuracy_v3.0.0.json"
    assert missing_files(spec, data_dir=data_dir) == []
    assert missing_files(spec, data_dir=data_dir, multilabel_file=absent) == [str(absent)]
    # the multi-label file is ignored by label sets that do not read it
    assert missing_files(builtin_label_set_spec("imagenet", "original"), data_dir=data_dir,
                         multilabel_file=absent) == []


def test_it_refuses_to_compile_with_a_missing_file_and_names_it(
    data_dir: Path, tmp_path: Path
) -> None:
    root = _linked_data_dir(data_dir, tmp_path / "data", "")
    (root / "cifar10/cleanlab_mturk.json").unlink()
    with pytest.raises(DataError) as excinfo:
        compile_label_set(builtin_label_set_spec("cifar10", "corrected"), data_dir=root,
                          cache_dir=tmp_path / "cache")
    assert str(excinfo.value) == \
        "label set cifar10/corrected is missing files: cifar10/cleanlab_mturk.json"
    assert not (tmp_path / "cache").exists()


def test_it_needs_a_multilabel_file_for_the_multilabel_sets(data_dir: Path) -> None:
    with pytest.raises(DataError) as excinfo:
        compile_label_set(builtin_label_set_spec("imagenet", "multilabel"), data_dir=data_dir)
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
