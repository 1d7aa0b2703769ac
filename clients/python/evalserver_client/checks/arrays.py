"""An array read from a predictions file, and the server's checks on it: its dtype and shape
first (before any data is read), then its values in chunks of rows (class ids in range and
distinct in a row; scores finite and within float32's range), each problem reported as the
server reports it: the first one, by the same code and message, row and column."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The server's constants (workers/scoring/predictions/ of the evalserver): the top-k kept, the
# values a chunk holds (a problem is reported from the first chunk that has one), float32's
# largest value (float64 scores beyond it are refused).
MAX_TOPK = 5
CHUNK_VALUES = 2**21
FLOAT32_MAX = 3.4028234663852886e38
KIND_NAMES = {"b": "true/false values", "c": "complex numbers", "U": "text", "S": "bytes",
              "M": "dates", "m": "time spans", "V": "raw bytes"}


class PredictionProblem(ValueError):
    """Why the server would refuse the file: its error `code` and `message` (the server's
    words), and the 0-based `row` and `column` where the problem sits in one cell or row."""

    def __init__(self, code: str, message: str, row: int | None = None,
                 column: int | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.row, self.column = code, message, row, column

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class DType:
    """What the checks need of a NumPy dtype: its kind letter (i, u, f, b, c, U, S, M, m, V, O),
    size in bytes, NumPy's name for it (as the messages print it), whether it is structured
    and holds objects, and the byte order of its data ("<" or ">")."""

    kind: str
    itemsize: int
    name: str
    structured: bool = False
    has_object: bool = False
    byteorder: str = "<"

    def __str__(self) -> str:
        return self.name


INT64 = DType("i", 8, "int64")
FLOAT64 = DType("f", 8, "float64")

# (first row, rows) -> the values of those rows, flattened in row-major order
Rows = Callable[[int, int], Sequence[float]]


@dataclass(frozen=True)
class RawArray:
    dtype: DType
    shape: tuple[int, ...]
    where: str  # e.g. "the .npy file", "array 'scores' in the .npz file"
    rows: Rows
    first_line: int | None = None  # CSV only: the 1-based file line holding row 0


@dataclass(frozen=True)
class Content:
    """What an accepted file holds: class ids (`k` per row, best first) or scores (one column
    per class), its rows, the dtype it was read as, and its format."""

    kind: str  # "ids" | "scores"
    rows: int
    k: int
    dtype: str
    format: str

    def describe(self) -> str:
        if self.kind == "scores":
            return (f"{self.rows} rows of scores over {self.k} classes ({self.dtype}, "
                    f"{self.format}): the top-{min(MAX_TOPK, self.k)} is taken from them")
        top = "top-1 class ids" if self.k == 1 else f"top-{self.k} class ids, best first"
        return f"{self.rows} rows of {top} ({self.dtype}, {self.format})"


def row_name(index: int, first_line: int | None = None) -> str:
    """`row 17 (0-based)`, plus the file line for text formats where people count lines."""
    if first_line is None:
        return f"row {index} (0-based)"
    return f"row {index} (0-based; line {index + first_line} of the file)"


def check_layout(dtype: DType, shape: tuple[int, ...], where: str, *, num_examples: int,
                 num_classes: int) -> str:
    """The server's dtype and shape checks, run before any data is read; "ids" or "scores"."""
    if dtype.has_object:
        raise PredictionProblem(
            "object_array",
            f"{where} holds Python objects (dtype {dtype}); only plain numeric arrays are "
            "accepted, because reading objects would need pickle")
    if dtype.structured:
        raise PredictionProblem(
            "wrong_dtype",
            f"{where} has a structured dtype ({dtype}); expected a plain numeric "
            "array of integer class ids or floating-point scores")
    if dtype.kind not in "iuf":
        what = KIND_NAMES.get(dtype.kind, "values")
        raise PredictionProblem(
            "wrong_dtype",
            f"{where} holds {what} (dtype {dtype}); expected integer class ids or "
            "floating-point scores")
    kind = "ids" if dtype.kind in "iu" else "scores"
    if len(shape) not in (1, 2):
        raise PredictionProblem(
            "wrong_shape",
            f"{where} has shape {shape} ({len(shape)}-D); expected [N] or [N, k] "
            f"class ids, or an [N, {num_classes}] score matrix")
    if shape[0] == 0:
        raise PredictionProblem("empty_file", f"{where} has no rows")
    if shape[0] != num_examples:
        raise PredictionProblem(
            "wrong_row_count",
            f"{where} has {shape[0]} row{'s' * (shape[0] != 1)}; expected "
            f"{num_examples} (one per example, in the benchmark's order)")
    if kind == "ids":
        k = shape[1] if len(shape) == 2 else 1
        if k == 0:
            raise PredictionProblem("wrong_shape", f"{where} has shape {shape}: its rows are empty")
        if k > num_classes:
            raise PredictionProblem(
                "wrong_shape",
                f"{where} gives {k} class ids per row, but there are only {num_classes} classes")
    elif len(shape) == 1:
        raise PredictionProblem(
            "wrong_dtype",
            f"{where} is a 1-D array of floats (dtype {dtype}); top-1 class ids "
            f"must be integers, and scores must be a 2-D [N, {num_classes}] matrix")
    elif shape[1] != num_classes:
        hint = " (if these are class ids, save them as integers)" if shape[1] <= MAX_TOPK else ""
        raise PredictionProblem(
            "wrong_shape",
            f"{where} is a score matrix with {shape[1]} columns; expected one "
            f"column per class, num_classes = {num_classes}{hint}")
    return kind


def check_values(raw: RawArray, kind: str, num_classes: int, extension: str) -> Content:
    n = raw.shape[0]
    k = raw.shape[1] if len(raw.shape) == 2 else 1
    if kind == "ids":
        _check_ids(raw, n, k, num_classes)
    else:
        _check_scores(raw, n, num_classes)
    return Content(kind, n, k, str(raw.dtype), extension)


def _check_ids(raw: RawArray, n: int, k: int, num_classes: int) -> None:
    step = max(1, CHUNK_VALUES // k)
    for start in range(0, n, step):
        stop = min(n, start + step)
        values = raw.rows(start, stop)
        # min/max first, as the server does: only a bad file pays for locating the problem
        if min(values) < 0 or max(values) >= num_classes:
            i = next(i for i, v in enumerate(values) if v < 0 or v >= num_classes)
            r, c = divmod(i, k)
            at = f" at position {c} of its top-{k}" if k > 1 else ""
            raise PredictionProblem(
                "class_out_of_range",
                f"{row_name(start + r, raw.first_line)} has class id "
                f"{values[i]}{at}; ids must be in 0..{num_classes - 1}",
                row=start + r, column=c)
        if k > 1:
            for r in range(stop - start):
                row = values[r * k:(r + 1) * k]
                if len(set(row)) == k:
                    continue
                ordered = sorted(row)  # the smallest id that is there twice, and its 2nd place
                same = next(ordered[c] for c in range(k - 1) if ordered[c] == ordered[c + 1])
                again = [c for c, v in enumerate(row) if v == same][1]
                raise PredictionProblem(
                    "duplicate_class",
                    f"{row_name(start + r, raw.first_line)} lists class id "
                    f"{same} more than once; the ids in a row must be distinct",
                    row=start + r, column=again)


def _check_scores(raw: RawArray, n: int, num_classes: int) -> None:
    step = max(1, CHUNK_VALUES // num_classes)
    wide = raw.dtype.itemsize > 4  # float64 and wider: also refused beyond float32's range
    for start in range(0, n, step):
        values = raw.rows(start, min(n, start + step))
        # NaN and infinities make the sum not finite: one C loop decides, and only a chunk
        # whose sum is not finite is looked at value by value (finite float64 values can
        # overflow the sum: then none is found)
        if not math.isfinite(sum(values)):
            bad = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
            if bad is not None:
                r, c = divmod(bad, num_classes)
                raise PredictionProblem(
                    "not_finite",
                    f"{row_name(start + r, raw.first_line)} has the value "
                    f"{_shown(values[bad])} in column {c}, which is not finite; all scores "
                    "must be finite", row=start + r, column=c)
        if wide and max(-min(values), max(values)) > FLOAT32_MAX:
            i = next(i for i, v in enumerate(values) if abs(v) > FLOAT32_MAX)
            r, c = divmod(i, num_classes)
            raise PredictionProblem(
                "not_finite",
                f"{row_name(start + r, raw.first_line)} has the value "
                f"{_shown(values[i])} in column {c}, too large to store as a 32-bit float",
                row=start + r, column=c)


def _shown(value: float) -> str:
    """A float as NumPy prints one: `nan`, `inf`, `-inf`, `1e+39`."""
    return str(value)
