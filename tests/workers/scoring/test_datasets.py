"""Tests for workers.scoring.datasets: reading the public label files in canonical order.

The ImageNet class-folder -> file-number conversion is checked three independent ways
against the real files, because a wrong alignment would silently corrupt every ImageNet score.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workers.scoring import datasets
from workers.scoring.bundles import BundleData, builtin_bundle
from workers.scoring.datasets import DataError


def load_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def file_number(name: str) -> int:
    """1-based number of '[val/<wnid>/]ILSVRC2012_val_XXXXXXXX.JPEG', by plain slicing."""
    base = name.rsplit("/", 1)[-1]
    assert base.startswith("ILSVRC2012_val_") and base.endswith(".JPEG"), base
    return int(base[len("ILSVRC2012_val_"):-len(".JPEG")])


@pytest.fixture(scope="module")
def original(data_dir: Path) -> np.ndarray:
    return datasets.imagenet_original_labels(data_dir)


# ---------------------------------------------------------------- ImageNet alignment


def test_it_returns_imagenet_labels_in_file_number_order(
    original: np.ndarray, canonical_imagenet_labels: list[int]
) -> None:
    assert original.dtype == np.int16
    assert original.shape == (50_000,)
    assert original.tolist() == canonical_imagenet_labels


def test_it_agrees_with_every_given_label_of_the_imagenet_vote_file(
    data_dir: Path, original: np.ndarray
) -> None:
    entries = load_json(data_dir / "imagenet/cleanlab_mturk.json")
    mismatches = [(e["id"], e["given_original_label"], int(original[e["id"] - 1]))
                  for e in entries if int(original[e["id"] - 1]) != e["given_original_label"]]
    assert len(entries) == 5440
    assert mismatches == []


def test_it_puts_every_image_in_the_class_folder_of_its_label(
    original: np.ndarray, imagenet_paths: list[str], class_info: list[dict[str, Any]]
) -> None:
    # val/<wnid>/ILSVRC2012_val_XXXXXXXX.JPEG: the folder is the wnid of the file's label
    mismatches = []
    for path in imagenet_paths:
        folder = path.split("/")[1]
        label = int(original[file_number(path) - 1])
        if class_info[label]["wnid"] != folder:
            mismatches.append((path, label))
    assert len(imagenet_paths) == 50_000
    assert mismatches == []


def test_it_orders_class_ids_by_sorted_wordnet_id(class_info: list[dict[str, Any]]) -> None:
    wnids = [c["wnid"] for c in class_info]
    assert [c["cid"] for c in class_info] == list(range(1000))
    assert wnids == sorted(wnids)
    assert len(set(wnids)) == 1000


def test_it_gives_every_unrated_real_image_exactly_its_original_label(
    original: np.ndarray, real_lists: list[list[int]], real_rated_pairs: set[tuple[int, int]]
) -> None:
    rated_images = {i for i, _ in real_rated_pairs}
    unrated = [i for i in range(50_000) if i not in rated_images]
    mismatches = [(i, real_lists[i], int(original[i]))
                  for i in unrated if real_lists[i] != [int(original[i])]]
    assert len(rated_images) == 24_889  # MANIFEST.md: images that needed rating
    assert len(unrated) == 50_000 - 24_889
    assert mismatches == []


def test_it_maps_cleanlab_order_to_canonical_order_by_the_path_file(
    data_dir: Path, imagenet_paths: list[str]
) -> None:
    perm = datasets.imagenet_cleanlab_permutation(data_dir)
    assert perm.tolist() == [file_number(p) - 1 for p in imagenet_paths]
    values = np.arange(50_000, dtype=np.int64)  # value = cleanlab index
    canonical = datasets.imagenet_cleanlab_to_canonical(data_dir, values)
    expected = [0] * 50_000
    for i, path in enumerate(imagenet_paths):
        expected[file_number(path) - 1] = i
    assert canonical.tolist() == expected


def _fake_path_file(tmp_path: Path, paths: list[str]) -> Path:
    (tmp_path / "imagenet").mkdir()
    (tmp_path / "imagenet/cleanlab_index_to_filepath.json").write_text(json.dumps(paths))
    return tmp_path


def test_it_rejects_a_path_file_that_names_an_image_twice(
    tmp_path: Path, imagenet_paths: list[str]
) -> None:
    paths = list(imagenet_paths)
    paths[1] = paths[0]
    with pytest.raises(DataError) as excinfo:
        datasets.imagenet_cleanlab_permutation(_fake_path_file(tmp_path, paths))
    assert str(excinfo.value) == \
        "cleanlab_index_to_filepath.json does not name every image exactly once"


def test_it_rejects_a_path_file_of_the_wrong_length(
    tmp_path: Path, imagenet_paths: list[str]
) -> None:
    with pytest.raises(DataError) as excinfo:
        datasets.imagenet_cleanlab_permutation(_fake_path_file(tmp_path, imagenet_paths[:-1]))
    assert str(excinfo.value) == \
        "cleanlab_index_to_filepath.json: 49999 entries, expected 50000"


# ---------------------------------------------------------------- file names


def test_it_converts_indices_to_file_names_and_back() -> None:
    assert datasets.imagenet_file_name(0) == "ILSVRC2012_val_00000001.JPEG"
    assert datasets.imagenet_file_name(49_999) == "ILSVRC2012_val_00050000.JPEG"
    assert datasets.imagenet_index("ILSVRC2012_val_00000001.JPEG") == 0
    assert datasets.imagenet_index("ILSVRC2012_val_00050000.JPEG") == 49_999
    assert datasets.imagenet_index("val/n01440764/ILSVRC2012_val_00000293.JPEG") == 292
    round_trip = [datasets.imagenet_index(datasets.imagenet_file_name(i)) for i in range(50_000)]
    assert round_trip == list(range(50_000))


def test_it_names_examples_as_the_builtin_bundles_say(data_dir: Path) -> None:
    imagenet = BundleData(builtin_bundle("imagenet"), data_dir=data_dir)
    cifar10 = BundleData(builtin_bundle("cifar10"), data_dir=data_dir)
    assert imagenet.names("imagenet-val").name(292) == "ILSVRC2012_val_00000293.JPEG"
    assert cifar10.names("cifar10-test").name(7) == "cifar10-test[7]"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ILSVRC2012_val_00000000.JPEG",
         "ImageNet validation file number out of range: 'ILSVRC2012_val_00000000.JPEG'"),
        ("ILSVRC2012_val_00050001.JPEG",
         "ImageNet validation file number out of range: 'ILSVRC2012_val_00050001.JPEG'"),
        ("ILSVRC2012_val_0000001.JPEG",
         "not an ImageNet validation file name: 'ILSVRC2012_val_0000001.JPEG'"),
        ("ILSVRC2012_val_00000001.jpeg",
         "not an ImageNet validation file name: 'ILSVRC2012_val_00000001.jpeg'"),
        ("ILSVRC2012_val_00000001.JPEG.png",
         "not an ImageNet validation file name: 'ILSVRC2012_val_00000001.JPEG.png'"),
        ("ILSVRC2012_test_00000001.JPEG",
         "not an ImageNet validation file name: 'ILSVRC2012_test_00000001.JPEG'"),
        ("some_v2_image.jpeg", "not an ImageNet validation file name: 'some_v2_image.jpeg'"),
        ("", "not an ImageNet validation file name: ''"),
    ],
)
def test_it_rejects_bad_imagenet_file_names(name: str, message: str) -> None:
    with pytest.raises(DataError) as excinfo:
        datasets.imagenet_index(name)
    assert str(excinfo.value) == message


# ---------------------------------------------------------------- label arrays


def _npy(tmp_path: Path, array: np.ndarray) -> Path:
    path = tmp_path / "labels.npy"
    np.save(path, array)
    return path


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.int64])
def test_it_reads_a_valid_label_array_as_int16(tmp_path: Path, dtype: type) -> None:
    path = _npy(tmp_path, np.array([0, 3, 9, 9], dtype=dtype))
    labels = datasets.read_labels_npy(path, size=4, num_classes=10)
    assert labels.dtype == np.int16
    assert labels.tolist() == [0, 3, 9, 9]


@pytest.mark.parametrize(
    ("array", "size", "expected_message"),
    [
        (np.array([0, 1, 2], dtype=np.int64), 4, "expected 4 integer labels, got int64 (3,)"),
        (np.array([0, 1, 2, 3, 4], dtype=np.int64), 4, "expected 4 integer labels, got int64 (5,)"),
        (np.zeros((2, 2), dtype=np.int64), 4, "expected 4 integer labels, got int64 (2, 2)"),
        (np.array([0.0, 1.0, 2.0, 3.0]), 4, "expected 4 integer labels, got float64 (4,)"),
        (np.array([0, 1, 2, 10], dtype=np.int64), 4, "labels outside 0..9"),
        (np.array([0, -1, 2, 3], dtype=np.int64), 4, "labels outside 0..9"),
    ],
)
def test_it_rejects_label_arrays_of_the_wrong_length_type_or_range(
    tmp_path: Path, array: np.ndarray, size: int, expected_message: str
) -> None:
    path = _npy(tmp_path, array)
    with pytest.raises(DataError) as excinfo:
        datasets.read_labels_npy(path, size=size, num_classes=10)
    assert str(excinfo.value) == f"{path}: {expected_message}"


def test_it_reads_the_real_label_arrays_unchanged(data_dir: Path) -> None:
    for name, size in [("cifar10/original_labels.npy", 10_000),
                       ("mnist/original_labels.npy", 10_000),
                       ("cifar10/cifar10.1_v4_labels.npy", 2_021),
                       ("cifar10/cifar10.1_v6_labels.npy", 2_000)]:
        raw = np.load(data_dir / name).tolist()
        labels = datasets.read_labels_npy(data_dir / name, size=size, num_classes=10)
        assert labels.tolist() == raw
        assert len(raw) == size


# ---------------------------------------------------------------- MNIST images


def test_it_reads_the_mnist_test_images(data_dir: Path) -> None:
    images = datasets.read_mnist_images(data_dir)
    with gzip.open(data_dir / "mnist/t10k-images-idx3-ubyte.gz", "rb") as handle:
        raw = handle.read()
    assert images.shape == (10_000, 28, 28)
    assert images.dtype == np.uint8
    assert int.from_bytes(raw[0:4], "big") == 2051
    assert images.tobytes() == raw[16:]
    # row 0 of image 1 starts at byte 16 + 784
    assert images[1, 0].tolist() == list(raw[16 + 784:16 + 784 + 28])


def test_it_rejects_a_file_that_is_not_an_idx_image_file(tmp_path: Path) -> None:
    (tmp_path / "mnist").mkdir()
    with gzip.open(tmp_path / "mnist/t10k-images-idx3-ubyte.gz", "wb") as handle:
        handle.write((2049).to_bytes(4, "big") + (1).to_bytes(4, "big") * 3 + b"\0")
    with pytest.raises(DataError) as excinfo:
        datasets.read_mnist_images(tmp_path)
    assert str(excinfo.value) == "t10k-images-idx3-ubyte.gz is not an IDX image file"


# ---------------------------------------------------------------- vote files and names


def test_it_names_classes_of_each_benchmark(
    data_dir: Path, class_info: list[dict[str, Any]]
) -> None:
    def names(slug: str) -> tuple[str, ...]:
        return BundleData(builtin_bundle(slug), data_dir=data_dir).classes.names

    assert names("cifar10") == (
        "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
    assert names("mnist") == tuple("0123456789")
    assert names("imagenet") == tuple(c["synset"][0] for c in class_info)
    assert datasets.imagenet_wnids(data_dir) == tuple(c["wnid"] for c in class_info)


# ---------------------------------------------------------------- missing files


def test_it_names_the_missing_file(tmp_path: Path) -> None:
    cases = [
        (lambda: datasets.read_json(tmp_path / "nope.json"), tmp_path / "nope.json"),
        (lambda: datasets.read_labels_npy(tmp_path / "x.npy", size=1, num_classes=2),
         tmp_path / "x.npy"),
        (lambda: datasets.imagenet_original_labels(tmp_path),
         tmp_path / "imagenet/cleanlab_original_labels.npy"),
        (lambda: datasets.read_mnist_images(tmp_path),
         tmp_path / "mnist/t10k-images-idx3-ubyte.gz"),
    ]
    for call, path in cases:
        with pytest.raises(DataError) as excinfo:
            call()
        assert str(excinfo.value) == f"missing data file: {path}"


def test_it_names_the_missing_path_file_when_only_labels_are_present(
    tmp_path: Path, data_dir: Path
) -> None:
    (tmp_path / "imagenet").mkdir()
    shutil.copy(data_dir / "imagenet/cleanlab_original_labels.npy", tmp_path / "imagenet")
    with pytest.raises(DataError) as excinfo:
        datasets.imagenet_original_labels(tmp_path)
    assert str(excinfo.value) == \
        f"missing data file: {tmp_path / 'imagenet/cleanlab_index_to_filepath.json'}"
