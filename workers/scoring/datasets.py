"""Reading the public label files from the data directory, in each example set's canonical order.

The one subtle part is ImageNet: the cleanlab arrays are in *class-folder* order (the order
of `val/<wnid>/<file>` paths), while everything else, and every submission, is in file-number
order (ILSVRC2012_val_00000001.JPEG first). `imagenet_original_labels` does the conversion;
getting it wrong would silently corrupt every ImageNet score, hence the checks.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

IMAGENET_SIZE = 50_000
IMAGENET_NUM_CLASSES = 1000
_IMAGENET_NAME = re.compile(r"ILSVRC2012_val_(\d{8})\.JPEG$")


class DataError(RuntimeError):
    """A data file is missing or does not have the layout MANIFEST.md describes."""


def default_data_dir(project_root: Path | None = None) -> Path:
    """EVALSERVER_DATA_DIR, else ../shared/data beside the project, else <project>/data."""
    env = os.environ.get("EVALSERVER_DATA_DIR")
    if env:
        return Path(env)
    root = project_root or Path(__file__).resolve().parents[2]
    shared = root.parent / "shared" / "data"
    return shared if shared.is_dir() else root / "data"


def imagenet_file_name(index: int) -> str:
    """File name of the image at 0-based canonical index `index`."""
    return f"ILSVRC2012_val_{index + 1:08d}.JPEG"


def imagenet_index(file_name: str) -> int:
    """0-based canonical index of a validation file name (a path prefix is allowed)."""
    match = _IMAGENET_NAME.search(file_name)
    if not match:
        raise DataError(f"not an ImageNet validation file name: {file_name!r}")
    number = int(match.group(1))
    if not 1 <= number <= IMAGENET_SIZE:
        raise DataError(f"ImageNet validation file number out of range: {file_name!r}")
    return number - 1


def _require(path: Path) -> Path:
    if not path.is_file():
        raise DataError(f"missing data file: {path}")
    return path


def read_json(path: Path) -> Any:
    with open(_require(path), encoding="utf-8") as handle:
        return json.load(handle)


def read_labels_npy(path: Path, *, size: int, num_classes: int) -> np.ndarray:
    """A 1-D integer label array, checked for length and class range; returned as int16."""
    labels = np.load(_require(path), allow_pickle=False)
    if labels.ndim != 1 or labels.shape[0] != size or labels.dtype.kind not in "iu":
        raise DataError(
            f"{path}: expected {size} integer labels, got {labels.dtype} {labels.shape}"
        )
    if labels.min() < 0 or labels.max() >= num_classes:
        raise DataError(f"{path}: labels outside 0..{num_classes - 1}")
    return labels.astype(np.int16)


def imagenet_cleanlab_permutation(data_dir: Path) -> np.ndarray:
    """perm[i] = canonical index of the image at cleanlab index i (a checked permutation)."""
    paths = read_json(data_dir / "imagenet/cleanlab_index_to_filepath.json")
    if len(paths) != IMAGENET_SIZE:
        raise DataError(f"cleanlab_index_to_filepath.json: {len(paths)} entries, expected 50000")
    perm = np.fromiter((imagenet_index(p) for p in paths), dtype=np.int64, count=IMAGENET_SIZE)
    if np.unique(perm).shape[0] != IMAGENET_SIZE:
        raise DataError("cleanlab_index_to_filepath.json does not name every image exactly once")
    return perm


def imagenet_cleanlab_to_canonical(data_dir: Path, values: np.ndarray) -> np.ndarray:
    """Reorder a per-image array from cleanlab (class-folder) order to file-number order."""
    perm = imagenet_cleanlab_permutation(data_dir)
    out = np.empty_like(values)
    out[perm] = values
    return out


def imagenet_original_labels(data_dir: Path) -> np.ndarray:
    """Original ImageNet validation labels (int16[50000]) in canonical file-number order."""
    cleanlab = read_labels_npy(
        data_dir / "imagenet/cleanlab_original_labels.npy",
        size=IMAGENET_SIZE,
        num_classes=IMAGENET_NUM_CLASSES,
    )
    return imagenet_cleanlab_to_canonical(data_dir, cleanlab)


@lru_cache(maxsize=4)
def _imagenet_class_info(path: str) -> tuple[tuple[str, str], ...]:
    info = read_json(Path(path))
    if len(info) != IMAGENET_NUM_CLASSES or any(c["cid"] != i for i, c in enumerate(info)):
        raise DataError(f"{path}: expected 1000 classes with cid 0..999 in order")
    return tuple((c["wnid"], c["synset"][0]) for c in info)


def imagenet_wnids(data_dir: Path) -> tuple[str, ...]:
    return tuple(w for w, _ in _imagenet_class_info(str(data_dir / "imagenet/class_info.json")))


@dataclass(frozen=True)
class MturkRecord:
    index: int  # 0-based canonical index
    given: int  # the original label as the vote file states it
    guessed: int
    votes: dict[str, int]


def read_mnist_images(data_dir: Path) -> np.ndarray:
    """MNIST test images, uint8[10000, 28, 28], from the IDX file (no pickle involved)."""
    with gzip.open(_require(data_dir / "mnist/t10k-images-idx3-ubyte.gz"), "rb") as handle:
        raw = handle.read()
    magic, count, rows, cols = np.frombuffer(raw[:16], dtype=">i4")
    if magic != 2051 or len(raw) != 16 + count * rows * cols:
        raise DataError("t10k-images-idx3-ubyte.gz is not an IDX image file")
    return np.frombuffer(raw[16:], dtype=np.uint8).reshape(count, rows, cols)
