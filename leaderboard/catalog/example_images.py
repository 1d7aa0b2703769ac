"""Example images for the review page, as inline PNG data URIs (no imaging library).

Only image sets whose images the server has are drawn: MNIST's test set (from the IDX file
in the data directory). Others answer None and the page shows the file name instead.
"""

from __future__ import annotations

import base64
import struct
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings

from workers.scoring import datasets


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def png_gray(pixels: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG of a uint8[height, width] array."""
    image = np.ascontiguousarray(pixels, dtype=np.uint8)
    if image.ndim != 2 or image.size == 0:
        raise ValueError("expected a non-empty 2-D array")
    height, width = image.shape
    # each scanline starts with filter type 0 (none)
    raw = b"".join(b"\x00" + image[row].tobytes() for row in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))


def png_data_uri(pixels: np.ndarray) -> str:
    return "data:image/png;base64," + base64.b64encode(png_gray(pixels)).decode("ascii")


@lru_cache(maxsize=2)
def _mnist(data_dir: str) -> np.ndarray:
    return datasets.read_mnist_images(Path(data_dir))


def example_image_uri(image_set: str, index: int) -> str | None:
    """The example's image as a data URI, or None when the server has no images for it."""
    if image_set != "mnist-test":
        return None
    try:
        images = _mnist(str(settings.EVALSERVER_DATA_DIR))
    except (datasets.DataError, OSError):
        return None
    if not 0 <= index < len(images):
        return None
    return png_data_uri(images[index])
