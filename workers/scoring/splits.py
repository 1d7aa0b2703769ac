"""The public and private parts of a hidden label set's examples (docs/metrics.md §17.4): a
seeded random choice of a fraction of them, or a list the host gives. The private part is
scored with everything else and shown only once staff reveal it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def private_mask_random(*, size: int, fraction: float, seed: int) -> np.ndarray:
    """round(fraction * size) examples, chosen by NumPy's PCG64 generator from `seed` (the
    same on every machine and NumPy version that keeps `default_rng`'s stream)."""
    if size < 2 or not 0 < fraction < 1:
        raise ValueError(f"a split needs at least 2 examples and 0 < fraction < 1, got "
                         f"{size} and {fraction}")
    count = min(max(round(fraction * size), 1), size - 1)  # both parts non-empty
    chosen = np.random.default_rng(seed).permutation(size)[:count]
    mask = np.zeros(size, dtype=bool)
    mask[chosen] = True
    return mask


def private_mask_listed(*, size: int, indices: Sequence[int]) -> np.ndarray:
    """The examples listed (0-based indices, each once, both parts non-empty)."""
    chosen = np.asarray(indices, dtype=np.int64)
    if chosen.ndim != 1 or chosen.size == 0:
        raise ValueError("the private part lists no example")
    if chosen.min() < 0 or chosen.max() >= size:
        raise ValueError(f"an index outside 0..{size - 1}")
    if np.unique(chosen).size != chosen.size:
        raise ValueError("an example is listed twice")
    if chosen.size == size:
        raise ValueError("every example is private: the public part would be empty")
    mask = np.zeros(size, dtype=bool)
    mask[chosen] = True
    return mask


def pack_mask(mask: np.ndarray) -> bytes:
    return np.packbits(mask.astype(bool)).tobytes()


def unpack_mask(packed: bytes, size: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(packed, dtype=np.uint8), count=size).astype(bool)
