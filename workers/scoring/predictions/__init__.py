"""Parsing and validating uploaded prediction files (untrusted input).

INTERFACE (implemented by the predictions helper; other modules rely on exactly this):

    class PredictionError(ValueError):
        code: str        # short_snake_case, e.g. "wrong_row_count"
        message: str     # plain words naming the problem and where (row, column, key)

    @dataclass(frozen=True)
    class Predictions:
        topk: np.ndarray               # int32 [N, k], 1 <= k <= 5, class ids best first
        topk_scores: np.ndarray | None # float32 [N, k] score of each topk entry, when scores given
        scores: np.ndarray | None      # float32 [N, C], only when keep_scores=True and scores given
        scores_kind: str | None        # "probabilities" | "logits" | None (ids only)

    def parse_predictions(path, *, num_examples, num_classes, max_bytes=..., keep_scores=False,
                          filename=None) -> Predictions

Accepted content: class ids ([N] top-1, or [N, k] best first; the first 5 columns are kept but
all are validated) or a score matrix [N, num_classes] (logits or probabilities) from which the
top-5 is derived, ties going to the lower class id. Formats: .npy, .npz, .json, .csv (readers in
`prediction_formats.py`). Error codes: file_too_large, empty_file, corrupt_file,
unsupported_format, pickle_refused, object_array, wrong_dtype, wrong_shape, wrong_row_count,
class_out_of_range, duplicate_class, not_finite, unknown_keys, empty_cell, not_a_number.
"""

from __future__ import annotations

import functools
import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workers.scoring.predictions.formats import (
    PredictionError,
    RawArray,
    read_npy,
    read_npz,
    row_name,
)
from workers.scoring.predictions.text import read_csv, read_json

__all__ = [
    "MAX_TOPK",
    "SUPPORTED_EXTENSIONS",
    "PredictionError",
    "Predictions",
    "parse_predictions",
]

MAX_TOPK = 5
READERS: dict[str, Callable[..., RawArray]] = {
    ".npy": read_npy,
    ".npz": read_npz,
    ".json": read_json,
    ".csv": read_csv,
}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(READERS)  # (".npy", ".npz", ".json", ".csv")
DEFAULT_MAX_BYTES = 512 * 2**20
PROBABILITY_TOLERANCE = 1e-3
# Rows are processed in chunks of about this many values (2097 rows of 1000 classes), so the
# temporaries (mainly one float32 copy of the chunk, 8 MB) stay small whatever N is.
CHUNK_VALUES = 2**21
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_KIND_NAMES = {
    "b": "true/false values",
    "c": "complex numbers",
    "U": "text",
    "S": "bytes",
    "M": "dates",
    "m": "time spans",
    "V": "raw bytes",
}


@dataclass(frozen=True, eq=False)  # eq=False: arrays have no single truth value to compare
class Predictions:
    topk: np.ndarray  # int32 [N, k], 1 <= k <= 5, class ids best first
    topk_scores: np.ndarray | None  # float32 [N, k]: score of each topk entry, if scores given
    scores: np.ndarray | None  # float32 [N, C], only when keep_scores=True and scores given
    scores_kind: str | None  # "probabilities" | "logits" | None (ids only)

    @property
    def num_examples(self) -> int:
        return int(self.topk.shape[0])

    @property
    def k(self) -> int:
        return int(self.topk.shape[1])


def parse_predictions(
    path: str | os.PathLike[str],
    *,
    num_examples: int,
    num_classes: int,
    max_bytes: int = DEFAULT_MAX_BYTES,
    keep_scores: bool = False,
    filename: str | None = None,
) -> Predictions:
    """Read and strictly validate one uploaded prediction file; raise PredictionError if bad.

    `filename` is the uploader's original file name: its extension picks the format (uploads
    are usually stored under a neutral temporary name); without it `path`'s extension does.
    """
    if num_examples < 1 or num_classes < 1 or max_bytes < 1:
        raise ValueError("num_examples, num_classes and max_bytes must be positive")
    path = Path(path)
    extension = Path(filename if filename is not None else path.name).suffix.lower()
    if extension not in READERS:
        shown = f"'{extension}'" if extension else "no extension"
        raise PredictionError(
            "unsupported_format",
            f"files with {shown} are not accepted; use one of {', '.join(SUPPORTED_EXTENSIONS)}",
        )
    # the size on disk is checked before a single byte is read
    size = path.stat().st_size
    if size > max_bytes:
        raise PredictionError(
            "file_too_large", f"the file is {size} bytes; the limit is {max_bytes} bytes"
        )
    if size == 0:
        raise PredictionError("empty_file", "the file is empty (0 bytes)")
    check = functools.partial(_check_layout, num_examples=num_examples, num_classes=num_classes)
    raw = READERS[extension](path, size=size, max_bytes=max_bytes, check=check)
    if check(raw.array.dtype, raw.array.shape, raw.where) == "ids":
        topk = _topk_from_ids(raw, num_classes)
        return Predictions(_frozen(topk), None, None, None)
    return _topk_from_scores(raw, num_classes, keep_scores)


def _check_layout(
    dtype: np.dtype, shape: tuple[int, ...], where: str, *, num_examples: int, num_classes: int
) -> str:
    """Dtype and shape checks, run before any data is read; returns "ids" or "scores"."""
    if dtype.hasobject:
        raise PredictionError(
            "object_array",
            f"{where} holds Python objects (dtype {dtype}); only plain numeric arrays are "
            "accepted, because reading objects would need pickle",
        )
    if dtype.fields is not None:
        raise PredictionError(
            "wrong_dtype",
            f"{where} has a structured dtype ({dtype}); expected a plain numeric "
            "array of integer class ids or floating-point scores",
        )
    if dtype.kind not in "iuf":
        what = _KIND_NAMES.get(dtype.kind, "values")
        raise PredictionError(
            "wrong_dtype",
            f"{where} holds {what} (dtype {dtype}); expected integer class ids or "
            "floating-point scores",
        )
    kind = "ids" if dtype.kind in "iu" else "scores"
    if len(shape) not in (1, 2):
        raise PredictionError(
            "wrong_shape",
            f"{where} has shape {shape} ({len(shape)}-D); expected [N] or [N, k] "
            f"class ids, or an [N, {num_classes}] score matrix",
        )
    if shape[0] == 0:
        raise PredictionError("empty_file", f"{where} has no rows")
    if shape[0] != num_examples:
        raise PredictionError(
            "wrong_row_count",
            f"{where} has {shape[0]} row{'s' * (shape[0] != 1)}; expected "
            f"{num_examples} (one per example, in the benchmark's order)",
        )
    if kind == "ids":
        k = shape[1] if len(shape) == 2 else 1
        if k == 0:
            raise PredictionError("wrong_shape", f"{where} has shape {shape}: its rows are empty")
        if k > num_classes:
            raise PredictionError(
                "wrong_shape",
                f"{where} gives {k} class ids per row, but there are only {num_classes} classes",
            )
    elif len(shape) == 1:
        raise PredictionError(
            "wrong_dtype",
            f"{where} is a 1-D array of floats (dtype {dtype}); top-1 class ids "
            f"must be integers, and scores must be a 2-D [N, {num_classes}] matrix",
        )
    elif shape[1] != num_classes:
        hint = " (if these are class ids, save them as integers)" if shape[1] <= MAX_TOPK else ""
        raise PredictionError(
            "wrong_shape",
            f"{where} is a score matrix with {shape[1]} columns; expected one "
            f"column per class, num_classes = {num_classes}{hint}",
        )
    return kind


def _topk_from_ids(raw: RawArray, num_classes: int) -> np.ndarray:
    ids = raw.array if raw.array.ndim == 2 else raw.array.reshape(-1, 1)
    n, k = ids.shape
    keep = min(k, MAX_TOPK)
    topk = np.empty((n, keep), dtype=np.int32)
    step = max(1, CHUNK_VALUES // k)
    release = _page_releaser(raw.array)
    for start in range(0, n, step):
        chunk = np.asarray(ids[start : start + step])
        # min/max first: one cheap pass each, and only a bad file pays for locating the problem
        if chunk.min() < 0 or chunk.max() >= num_classes:
            r, c = np.argwhere((chunk < 0) | (chunk >= num_classes))[0]
            at = f" at position {c} of its top-{k}" if k > 1 else ""
            raise PredictionError(
                "class_out_of_range",
                f"{row_name(start + r, raw.first_line)} has class id "
                f"{chunk[r, c]}{at}; ids must be in 0..{num_classes - 1}",
                row=start + r, column=c,
            )
        if k > 1:  # duplicates sit next to each other once each row is sorted
            ordered = np.sort(chunk, axis=1)
            same = ordered[:, 1:] == ordered[:, :-1]
            if same.any():
                r, c = np.argwhere(same)[0]
                again = np.flatnonzero(chunk[r] == ordered[r, c])[1]  # its second position
                raise PredictionError(
                    "duplicate_class",
                    f"{row_name(start + r, raw.first_line)} lists class id "
                    f"{ordered[r, c]} more than once; the ids in a row must be distinct",
                    row=start + r, column=again,
                )
        topk[start : start + len(chunk)] = chunk[:, :keep]  # in range, so int32 is exact
        release(start + len(chunk))
    return topk


def _topk_from_scores(raw: RawArray, num_classes: int, keep_scores: bool) -> Predictions:
    scores = raw.array
    n = scores.shape[0]
    k = min(MAX_TOPK, num_classes)
    # float16 arithmetic is emulated and slow: widen chunks to float32. Wider floats keep their
    # precision so near-equal scores are ordered as the uploader computed them.
    work = np.dtype(np.float32) if scores.dtype.itemsize <= 4 else scores.dtype.newbyteorder("=")
    topk = np.empty((n, k), dtype=np.int32)
    topk_scores = np.empty((n, k), dtype=np.float32)
    kept = np.empty((n, num_classes), dtype=np.float32) if keep_scores else None
    probabilities = True
    step = max(1, CHUNK_VALUES // num_classes)
    release = _page_releaser(scores)
    for start in range(0, n, step):
        # a private copy of just this slice (top-k overwrites it); from a memory map this is
        # the only read of these rows
        chunk = np.array(scores[start : start + step], dtype=work)
        low, high = chunk.min(), chunk.max()  # NaN propagates through min/max
        if not (np.isfinite(low) and np.isfinite(high)):
            r, c = np.argwhere(~np.isfinite(chunk))[0]
            raise PredictionError(
                "not_finite",
                f"{row_name(start + r, raw.first_line)} has the value "
                f"{chunk[r, c]} in column {c}, which is not finite; all scores must be finite",
                row=start + r, column=c,
            )
        if work.itemsize > 4 and max(-low, high) > _FLOAT32_MAX:
            r, c = np.argwhere(np.abs(chunk) > _FLOAT32_MAX)[0]
            raise PredictionError(
                "not_finite",
                f"{row_name(start + r, raw.first_line)} has the value "
                f"{chunk[r, c]} in column {c}, too large to store as a 32-bit float",
                row=start + r, column=c,
            )
        if probabilities:  # once one chunk fails, the whole matrix is logits
            sums = chunk.sum(axis=1, dtype=np.float64)
            probabilities = bool(
                low >= 0 and high <= 1 and np.all(np.abs(sums - 1.0) <= PROBABILITY_TOLERANCE)
            )
        stop = start + len(chunk)
        if kept is not None:  # before _chunk_topk overwrites the winners
            kept[start:stop] = chunk
        topk[start:stop], topk_scores[start:stop] = _chunk_topk(chunk, k)
        release(stop)
    return Predictions(
        topk=_frozen(topk),
        topk_scores=_frozen(topk_scores),
        scores=None if kept is None else _frozen(kept),
        scores_kind="probabilities" if probabilities else "logits",
    )


def _chunk_topk(chunk: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids and scores of the k best per row, best first, equal scores in ascending class id.

    k rounds of argmax, each knocking its winner out with -inf (scores are finite by now), so
    `chunk` is overwritten. argmax returns the first, i.e. lowest-id, of equal maxima: exactly
    the tie rule, with no sort. On 1000 classes this is 2-4x faster than argpartition + a
    stable sort of the k, which also breaks ties at the cut arbitrarily and would need a fix-up
    (rows with ties at the cut are common: float16 probabilities underflow to exact zeros).
    """
    rows = np.arange(chunk.shape[0])
    ids = np.empty((chunk.shape[0], k), dtype=np.intp)
    values = np.empty((chunk.shape[0], k), dtype=chunk.dtype)
    for rank in range(k):
        best = chunk.argmax(axis=1)
        ids[:, rank] = best
        values[:, rank] = chunk[rows, best]
        chunk[rows, best] = -np.inf
    return ids, values


def _page_releaser(array: np.ndarray) -> Callable[[int], None]:
    """For a C-ordered memory map: a function that drops the pages of the rows already done.

    Pages read through a memory map count towards resident memory until the map is closed, so a
    100 MB matrix would raise peak memory by 100 MB. Dropping them (they stay in the OS page
    cache, nothing is read twice) keeps the peak at about one chunk. Only an optimisation: any
    surprise (not a memmap, no madvise on this OS) gives a function that does nothing.
    """
    mapped = getattr(array, "_mmap", None)
    if mapped is None or not hasattr(mmap, "MADV_DONTNEED") or not array.flags.c_contiguous:
        return lambda rows: None
    try:  # where np.memmap placed the array inside its map
        base = array.ctypes.data - np.frombuffer(mapped, np.uint8, count=1).ctypes.data
    except (TypeError, ValueError):
        return lambda rows: None
    row_bytes, done = array.strides[0], 0

    def release(rows: int) -> None:
        nonlocal done
        end = (base + rows * row_bytes) // mmap.PAGESIZE * mmap.PAGESIZE
        if end > done:
            try:
                mapped.madvise(mmap.MADV_DONTNEED, done, end - done)
            except (OSError, ValueError):
                pass
            done = end

    return release


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False  # Predictions is frozen; its arrays should be too
    return array
