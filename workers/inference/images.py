"""The images a checkpoint is run on, preprocessed once into one float32 [N, C, H, W] array.

Sources, each in its image set's canonical order (the order scores are stored in):
- MNIST: the real t10k IDX file of the data directory;
- CIFAR-10: the official python "test_batch" (cifar-10-batches-py), configured by a
  maintainer; CIFAR-10.1: the official cifar10.1_v4/v6_data.npy files;
- ImageNet: a maintainer-configured folder of ILSVRC2012_val_%08d.JPEG files, by file number.
The array is computed once per image set and then memory-mapped by every run (see sandbox),
so decoding and normalising never sit inside a model's timed loop.
"""

from __future__ import annotations

import codecs
import importlib
import os
import pickle
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from workers.inference.preprocessing import PREPROCESSING, preprocessing_for
from workers.scoring.bundles import builtin_bundle
from workers.scoring.datasets import DataError, imagenet_file_name, read_mnist_images

CHUNK = 512  # images decoded and normalised at a time: bounds the uint8 staging memory


def resolve_image_set(benchmark_or_image_set: str) -> tuple[str, str, int]:
    """(benchmark, image set slug, size) for a benchmark (its main image set) or an image-set
    slug, among the built-in benchmarks whose checkpoints are run (`PREPROCESSING`); the
    sizes are those of the benchmarks' bundles (benchmarks/*.toml)."""
    for benchmark in PREPROCESSING:
        bundle = builtin_bundle(benchmark)
        slug = bundle.main_example_set if benchmark_or_image_set == benchmark \
            else benchmark_or_image_set
        for image_set in bundle.example_sets:
            if image_set.slug == slug:
                return benchmark, slug, image_set.size
    raise KeyError(f"unknown benchmark or image set {benchmark_or_image_set!r}")


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


def read_cifar10_1(path: Path) -> np.ndarray:
    """uint8 [N, 3, 32, 32] from an official cifar10.1_v*_data.npy (uint8 [N, 32, 32, 3])."""
    if not Path(path).is_file():
        raise DataError(f"missing CIFAR-10.1 data file: {path}")
    data = np.load(path, allow_pickle=False)
    if data.dtype != np.uint8 or data.ndim != 4 or data.shape[1:] != (32, 32, 3):
        raise DataError(f"{path}: expected uint8 [N, 32, 32, 3], got {data.dtype} {data.shape}")
    return np.ascontiguousarray(data.transpose(0, 3, 1, 2))


# -- ImageNet's JPEG folder -----------------------------------------------------------------

def imagenet_paths(folder: Path, count: int) -> list[Path]:
    """The first `count` validation files in canonical order; all must exist."""
    paths = [Path(folder) / imagenet_file_name(i) for i in range(count)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise DataError(
            f"the ImageNet folder {folder} lacks {len(missing)} of the {count} validation "
            f"images, first {missing[0]}"
        )
    return paths


# -- the public entry point -----------------------------------------------------------------

def load_images(
    benchmark_or_image_set: str,
    *,
    data_dir: Path | None = None,
    cifar10_batch: Path | None = None,
    cifar10_1_data: Path | None = None,
    imagenet_dir: Path | None = None,
    expected_size: int | None = None,
    limit: int | None = None,
    out: Path | None = None,
    workers: int | None = None,
) -> np.ndarray:
    """Preprocessed float32 [N, C, H, W] images of an image set, in canonical order.

    expected_size: how many images the source must hold (default: the bundle's size; tests
    pass a small number for small fixture folders). limit: keep only the first `limit`.
    out: write into this .npy file (memory-mapped) instead of memory; use it for ImageNet,
    whose 50,000 preprocessed images take 30 GB. workers: JPEG-decoding threads.
    """
    benchmark, image_set, declared_size = resolve_image_set(benchmark_or_image_set)
    prep = preprocessing_for(benchmark)
    size = declared_size if expected_size is None else expected_size
    count = size if limit is None else min(limit, size)

    pixels: np.ndarray | None = None  # uint8 [N, C, H, W], for the in-memory sources
    decode: Callable[[int], np.ndarray] | None = None  # index -> uint8 [C, H, W] (ImageNet)
    if image_set == "mnist-test":
        if data_dir is None:
            raise DataError("MNIST images are read from the data directory: pass data_dir")
        pixels = read_mnist_images(Path(data_dir))[:, None]
    elif image_set == "cifar10-test":
        if cifar10_batch is None:
            raise DataError("CIFAR-10 images need the cifar-10-batches-py test_batch file")
        pixels = read_cifar10_batch(Path(cifar10_batch))[0]
    elif image_set.startswith("cifar10.1-"):
        if cifar10_1_data is None:
            raise DataError(f"{image_set} images need the official cifar10.1_*_data.npy file")
        pixels = read_cifar10_1(Path(cifar10_1_data))
    else:
        if imagenet_dir is None:
            raise DataError("ImageNet images need a folder of ILSVRC2012_val_*.JPEG files")
        paths = imagenet_paths(Path(imagenet_dir), count)

        def decode(index: int) -> np.ndarray:
            with Image.open(paths[index]) as image:
                return prep.resize_and_crop(image)

    if pixels is not None and pixels.shape[0] != size:
        raise DataError(f"{image_set}: the source holds {pixels.shape[0]} images, expected {size}")

    shape = (count, *prep.input_shape)
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
            result[start:stop] = prep.normalize(chunk)
    if isinstance(result, np.memmap):
        result.flush()
    return result
