"""The images a checkpoint is run on, preprocessed once into one float32 [N, C, H, W] array.

Where an example set's images are and how they are stored is declared by its bundle
(`images = { format, path | setting }`, docs/bundles.md §4.1), each in the example set's
canonical order (the order scores are stored in):
- `idx`: an IDX image file, gzipped or not (MNIST's t10k);
- `cifar-batch`: a python batch of the CIFAR releases (cifar-10-batches-py/test_batch);
- `npy`: a uint8 [N, H, W, C] or [N, H, W] array (the CIFAR-10.1 data files);
- `folder`: one image file per example, named by the example's name (ImageNet's JPEGs).
How they are turned into a model's input is the benchmark's declared `Preprocessing`.
The array is computed once per example set and then memory-mapped by every run (see sandbox),
so decoding and normalising never sit inside a model's timed loop.
"""

from __future__ import annotations

import codecs
import gzip
import importlib
import os
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from workers.inference.preprocessing import Preprocessing
from workers.scoring.bundles.model import IMAGE_FORMATS
from workers.scoring.datasets import DataError

CHUNK = 512  # images decoded and normalised at a time: bounds the uint8 staging memory


@dataclass(frozen=True)
class ImageSource:
    """An example set's images on this host: their declared format and where they are."""

    format: str  # one of IMAGE_FORMATS
    path: Path
    name: str = ""  # the example set's slug, for messages

    def __post_init__(self) -> None:
        if self.format not in IMAGE_FORMATS:
            raise ValueError(f"unknown image format {self.format!r} (known: "
                             f"{', '.join(IMAGE_FORMATS)})")


# -- CIFAR-10's pickled test batch -----------------------------------------------------------
#
# The official CIFAR-10 python release is a pickle, and there is no other official layout of
# the test set in canonical order. It is configured by a maintainer, never uploaded, but a
# pickle can still name any callable, so it is read with an unpickler that resolves only the
# handful of numpy internals needed to rebuild a plain array (and the latin-1 codec that
# Python 2 pickles use for byte strings). Any other global raises before it is called.

def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    if encoding.lower().replace("-", "") != "latin1":
        raise pickle.UnpicklingError(f"codec {encoding!r} is not allowed")
    return codecs.encode(text, "latin1")


def _allowed_globals() -> dict[tuple[str, str], Any]:
    multiarray = importlib.import_module("numpy._core.multiarray")
    numeric = importlib.import_module("numpy._core.numeric")
    allowed: dict[tuple[str, str], Any] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): _latin1_encode,
    }
    for prefix in ("numpy.core", "numpy._core"):  # numpy 1 and numpy 2 spellings
        allowed[prefix + ".multiarray", "_reconstruct"] = multiarray._reconstruct
        allowed[prefix + ".numeric", "_frombuffer"] = numeric._frombuffer
    return allowed


class RestrictedUnpickler(pickle.Unpickler):
    """Rebuilds dicts, lists, bytes and numpy arrays; refuses every other global."""

    _allowed: dict[tuple[str, str], Any] | None = None

    def find_class(self, module: str, name: str) -> Any:
        if RestrictedUnpickler._allowed is None:
            RestrictedUnpickler._allowed = _allowed_globals()
        target = RestrictedUnpickler._allowed.get((module, name))
        if target is None:
            raise pickle.UnpicklingError(f"the pickle names {module}.{name}, which is not allowed")
        return target


def read_cifar10_batch(path: Path) -> tuple[np.ndarray, list[int]]:
    """uint8 [N, 3, 32, 32] images and labels of a cifar-10-batches-py batch file."""
    if not Path(path).is_file():
        raise DataError(f"missing CIFAR-10 batch file: {path}")
    with open(path, "rb") as handle:
        try:
            batch = RestrictedUnpickler(handle, encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
            raise DataError(f"{path}: not a CIFAR-10 python batch ({exc})") from None
    if not isinstance(batch, dict):
        raise DataError(f"{path}: not a CIFAR-10 python batch (not a dict)")
    data, labels = batch.get(b"data"), batch.get(b"labels")
    if (
        not isinstance(data, np.ndarray)
        or data.dtype != np.uint8
        or data.ndim != 2
        or data.shape[1] != 3 * 32 * 32
        or not isinstance(labels, list)
        or len(labels) != data.shape[0]
    ):
        raise DataError(f"{path}: expected b'data' uint8 [N, 3072] and N b'labels'")
    # each row is 1024 red, then 1024 green, then 1024 blue values, rows of 32 pixels
    return data.reshape(-1, 3, 32, 32), [int(v) for v in labels]


def read_npy_images(path: Path) -> np.ndarray:
    """uint8 [N, C, H, W] from a uint8 [N, H, W, C] (or [N, H, W]) .npy file, such as the
    official cifar10.1_v*_data.npy."""
    if not Path(path).is_file():
        raise DataError(f"missing image array file: {path}")
    data = np.load(path, allow_pickle=False)
    if data.dtype != np.uint8 or data.ndim not in (3, 4):
        raise DataError(f"{path}: expected uint8 [N, H, W, C] or [N, H, W], got {data.dtype} "
                        f"{list(data.shape)}")
    data = data[..., None] if data.ndim == 3 else data
    return np.ascontiguousarray(data.transpose(0, 3, 1, 2))


def read_idx_images(path: Path) -> np.ndarray:
    """uint8 [N, 1, H, W] from an IDX image file (magic 2051), gzipped if its name ends .gz."""
    if not Path(path).is_file():
        raise DataError(f"missing IDX image file: {path}")
    opener: Callable[..., Any] = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as handle:
        raw = handle.read()
    magic, count, rows, cols = (np.frombuffer(raw[:16], dtype=">i4") if len(raw) >= 16
                                else (0, 0, 0, 0))
    if magic != 2051 or len(raw) != 16 + count * rows * cols:
        raise DataError(f"{path}: not an IDX image file")
    return np.frombuffer(raw[16:], dtype=np.uint8).reshape(count, 1, rows, cols)


# -- a folder of image files ------------------------------------------------------------------

def folder_paths(folder: Path, names: Sequence[str]) -> list[Path]:
    """The example's image files in canonical order (named by the example names); all must
    exist."""
    paths = [Path(folder) / name for name in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise DataError(
            f"the image folder {folder} lacks {len(missing)} of the {len(paths)} images, "
            f"first {missing[0]}"
        )
    return paths


def _decode(path: Path, inputs: Preprocessing) -> np.ndarray:
    """One image file -> uint8 [C, H, W] as the inputs declare (resized and cropped, or
    already of the declared size)."""
    with Image.open(path) as image:
        if inputs.resize_shorter is not None:
            return inputs.resize_and_crop(image)
        array = np.asarray(image.convert("L" if inputs.color == "grayscale" else "RGB"),
                           dtype=np.uint8)
    array = array.transpose(2, 0, 1) if array.ndim == 3 else array[None]
    if array.shape != inputs.input_shape:
        raise DataError(f"{path.name} is {array.shape[2]}x{array.shape[1]}; the benchmark's "
                        f"inputs are {inputs.input_shape[2]}x{inputs.input_shape[1]} and "
                        "declare no resizing")
    return array


# -- the public entry point -----------------------------------------------------------------

def source_pixels(source: ImageSource) -> np.ndarray:
    """uint8 [N, C, H, W] of a source held in one file (any but a folder)."""
    if source.format == "idx":
        return read_idx_images(source.path)
    if source.format == "cifar-batch":
        return read_cifar10_batch(source.path)[0]
    return read_npy_images(source.path)


def load_images(
    source: ImageSource,
    *,
    inputs: Preprocessing,
    size: int,
    names: Sequence[str] | None = None,
    limit: int | None = None,
    out: Path | None = None,
    workers: int | None = None,
) -> np.ndarray:
    """Preprocessed float32 [N, C, H, W] images of an example set, in canonical order.

    size: how many images the source must hold (the example set's size; tests pass a small
    number for small fixture folders). names: the example names, for a `folder` source (the
    first `size`). limit: keep only the first `limit`. out: write into this .npy file
    (memory-mapped) instead of memory; use it for large sets (ImageNet's 50,000 preprocessed
    images take 30 GB). workers: image-decoding threads.
    """
    count = size if limit is None else min(limit, size)
    pixels: np.ndarray | None = None  # uint8 [N, C, H, W], for the one-file sources
    decode: Callable[[int], np.ndarray] | None = None  # index -> uint8 [C, H, W] (a folder)
    if source.format == "folder":
        if names is None:
            raise DataError("a folder of images needs the example names")
        paths = folder_paths(source.path, list(names)[:count])

        def decode(index: int) -> np.ndarray:
            return _decode(paths[index], inputs)
    else:
        pixels = source_pixels(source)
        if pixels.shape[0] != size:
            raise DataError(f"{source.name or source.path.name}: the source holds "
                            f"{pixels.shape[0]} images, expected {size}")
        if inputs.resize_shorter is not None:
            raise DataError(f"{source.format} images are used at their size; the benchmark's "
                            "inputs declare a resize")

    shape = (count, *inputs.input_shape)
    result: np.ndarray
    if out is not None:
        result = np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=shape)
    else:
        result = np.empty(shape, dtype=np.float32)
    threads = workers or min(8, len(os.sched_getaffinity(0)))
    with ThreadPoolExecutor(max_workers=threads) as pool:  # Pillow decodes without the GIL
        for start in range(0, count, CHUNK):
            stop = min(start + CHUNK, count)
            if pixels is not None:
                chunk = pixels[start:stop]
            else:
                assert decode is not None
                chunk = np.stack(list(pool.map(decode, range(start, stop))))
            result[start:stop] = inputs.normalize(chunk)
    if isinstance(result, np.memmap):
        result.flush()
    return result
