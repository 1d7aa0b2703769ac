"""Example images for the review, audit and gallery pages, as inline PNG data URIs (no
imaging library).

Only example sets whose images the server has in one array file, as their bundle declares
(docs/bundles.md §4.1: `idx`, `cifar-batch` or `npy`; MNIST's test set from the IDX file of the
data directory), are drawn. Others answer None; the review pages show a folder's image files
as they are, or say why they cannot (leaderboard/catalog/example_files.py).
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from leaderboard.catalog.image_sources import example_set_source
from leaderboard.catalog.models import ExampleSet
from workers.inference.images import ImageSource, source_pixels
from workers.scoring.datasets import DataError


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def png_bytes(pixels: np.ndarray) -> bytes:
    """An 8-bit PNG of a uint8 [height, width] (grayscale) or [height, width, 3] (RGB) array."""
    image = np.ascontiguousarray(pixels, dtype=np.uint8)
    if image.ndim not in (2, 3) or image.size == 0 or (image.ndim == 3 and image.shape[2] != 3):
        raise ValueError("expected a non-empty [H, W] or [H, W, 3] array")
    height, width = image.shape[:2]
    # each scanline starts with filter type 0 (none)
    raw = b"".join(b"\x00" + image[row].tobytes() for row in range(height))
    color_type = 0 if image.ndim == 2 else 2
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))


def png_data_uri(pixels: np.ndarray) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(pixels)).decode("ascii")


@lru_cache(maxsize=2)
def _pixels(image_format: str, path: str) -> np.ndarray:
    """uint8 [N, C, H, W] of a one-file image source (read once, for the next pages)."""
    return source_pixels(ImageSource(image_format, Path(path)))


def _drawable(images: np.ndarray, index: int) -> str | None:
    if images.shape[1] not in (1, 3) or not 0 <= index < len(images):
        return None
    pixels = images[index]
    return png_data_uri(pixels[0] if pixels.shape[0] == 1 else pixels.transpose(1, 2, 0))


def example_image_pixels_uri(image_format: str, path: Path, index: int) -> str | None:
    """Image `index` of a one-file source as a data URI; None when it has no such image or
    its images are neither grayscale nor RGB. Raises DataError or OSError when the file
    cannot be read as its format."""
    return _drawable(_pixels(image_format, str(path)), index)


def example_image_drawer(example_set: str) -> Callable[[int], str | None]:
    """example index -> its image as a data URI, or None when the server has no images for
    it; the example set's declared source is looked up once, for a page that draws many."""
    row = ExampleSet.objects.filter(slug=example_set).first()
    source = example_set_source(example_set=row) if row is not None else None
    if source is None or source.format == "folder":
        return lambda index: None
    try:
        images = _pixels(source.format, str(source.path))
    except (DataError, OSError):
        return lambda index: None
    return lambda index: _drawable(images, index)

