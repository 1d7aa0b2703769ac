"""Readers for uploaded prediction files (.npy, .npz, .json, .csv): untrusted input.

Each reader turns a file into one raw array and says where it came from; deciding whether the
array holds class ids or scores, and every check on its values, is left to `predictions.py`.
Two rules hold throughout: nothing that can run code is ever loaded (pickles are refused before
NumPy sees them), and nothing is allocated on the strength of a size the file declares until
that size has been checked against the caller's limit.
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
from numpy.lib import format as npy_format

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members / an empty zip
# np.load reads small files into memory; bigger ones are memory-mapped so peak memory stays flat
MMAP_MIN_BYTES = 16 * 2**20
SCORE_KEYS = ("scores", "logits", "probabilities")
ID_KEYS = ("topk", "ids", "predictions")

# A layout check run on (dtype, shape, where) before any array data is read, so a hostile
# header cannot make us allocate or map a huge array of the wrong kind.
LayoutCheck = Callable[[np.dtype, tuple[int, ...], str], object]


class PredictionError(ValueError):
    """A problem with an uploaded prediction file, explained for the person who uploaded it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"PredictionError({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[type[PredictionError], tuple[str, str]]:
        # Celery pickles exceptions; the default reduce would call __init__ with one argument
        return (PredictionError, (self.code, self.message))


@dataclass(frozen=True)
class RawArray:
    array: np.ndarray
    where: str  # e.g. "the .npy file", "array 'scores' in the .npz file"
    first_line: int | None = None  # CSV only: the 1-based file line holding row 0


def row_name(index: int, first_line: int | None = None) -> str:
    """`row 17 (0-based)`, plus the file line for text formats where people count lines."""
    if first_line is None:
        return f"row {index} (0-based)"
    return f"row {index} (0-based; line {index + first_line} of the file)"


def refuse_pickle(head: bytes, what: str) -> None:
    # pickle protocols 2..5 start with PROTO (0x80) and the protocol number
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        raise PredictionError(
            "pickle_refused",
            f"{what} is a Python pickle, not a NumPy array; pickles are refused because loading "
            "one can run arbitrary code. Save plain arrays with numpy.save or numpy.savez.",
        )


def _bad_magic(head: bytes, what: str, fmt: str) -> PredictionError:
    refuse_pickle(head, what)
    if head[:4] in ZIP_MAGICS:
        return PredictionError(
            "corrupt_file", f"{what} is a zip archive (.npz), not a .npy file; rename it to .npz"
        )
    if head.startswith(NPY_MAGIC):
        return PredictionError(
            "corrupt_file", f"{what} is a single .npy array, not a .npz archive; rename it to .npy"
        )
    return PredictionError("corrupt_file", f"{what} is not a valid {fmt} file")


def choose_key(keys: list[str], where: str) -> str:
    """One array of any name, else the first recognised name (scores before ids)."""
    if len(keys) == 1:
        return keys[0]
    for key in SCORE_KEYS + ID_KEYS:
        if key in keys:
            return key
    shown = ", ".join(repr(k) for k in sorted(keys)[:20]) + (", ..." if len(keys) > 20 else "")
    raise PredictionError(
        "unknown_keys",
        f"{where} holds {len(keys)} entries ({shown}); expected a single array, or one named "
        f"{', '.join(SCORE_KEYS)} (scores) or {', '.join(ID_KEYS)} (class ids)",
    )


def _read_npy_header(fp: IO[bytes], where: str) -> tuple[np.dtype, tuple[int, ...], bool]:
    """Parse the .npy header (a Python literal, read with ast.literal_eval: never executed)."""
    try:
        version = npy_format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(fp)
        else:
            raise PredictionError(
                "corrupt_file", f"{where} uses .npy format version {version}, which is not accepted"
            )
    except PredictionError:
        raise
    except (ValueError, EOFError, OSError, SyntaxError, TypeError) as exc:
        raise PredictionError(
            "corrupt_file", f"{where} is truncated or damaged: its .npy header cannot be read"
        ) from exc
    return dtype, tuple(int(n) for n in shape), bool(fortran)


def _truncated(where: str, needed: int, present: int) -> PredictionError:
    return PredictionError(
        "corrupt_file",
        f"{where} is truncated: its .npy header promises {needed} bytes of data "
        f"but only {present} are there",
    )


def read_npy(path: Path, *, size: int, max_bytes: int, check: LayoutCheck) -> RawArray:
    where = "the .npy file"
    with open(path, "rb") as fp:
        head = fp.read(8)
        if not head.startswith(NPY_MAGIC):
            raise _bad_magic(head, where, ".npy")
        fp.seek(0)
        dtype, shape, _ = _read_npy_header(fp, where)
        offset = fp.tell()
    check(dtype, shape, where)  # object dtypes, wrong shapes, empty arrays: refused here
    needed = math.prod(shape) * dtype.itemsize
    if size - offset < needed:
        raise _truncated(where, needed, size - offset)
    try:
        mode: Literal["r"] | None = "r" if needed >= MMAP_MIN_BYTES else None
        array = np.load(path, mmap_mode=mode, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise PredictionError("corrupt_file", f"{where} could not be read as a .npy array") from exc
    return RawArray(array, where)


def read_npz(path: Path, *, size: int, max_bytes: int, check: LayoutCheck) -> RawArray:
    with open(path, "rb") as fp:
        head = fp.read(8)
    if head[:4] not in ZIP_MAGICS:
        raise _bad_magic(head, "the .npz file", ".npz (zip)")
    try:
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if not info.is_dir()]
            # zip-bomb guard: refuse on the sizes the archive declares, before inflating anything
            declared = sum(info.file_size for info in members)
            if declared > max_bytes:
                raise PredictionError(
                    "file_too_large",
                    f"the .npz file unpacks to {declared} bytes, over the limit of {max_bytes} "
                    "bytes",
                )
            if not members:
                raise PredictionError("empty_file", "the .npz file holds no arrays")
            by_key = {info.filename.removesuffix(".npy"): info for info in members}
            if len(by_key) != len(members):
                raise PredictionError("corrupt_file", "the .npz file has two arrays with one name")
            key = choose_key(list(by_key), "the .npz file")
            return _read_npz_member(archive, by_key[key], key, max_bytes, check)
    except PredictionError:
        raise
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        NotImplementedError,
        RuntimeError,
        ValueError,
    ) as exc:  # RuntimeError: encrypted member
        raise PredictionError(
            "corrupt_file", "the .npz file is truncated or damaged: it is not a readable zip"
        ) from exc


def _read_npz_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, max_bytes: int, check: LayoutCheck
) -> RawArray:
    where = f"array '{key}' in the .npz file"
    with archive.open(info) as fp:
        head = fp.read(8)
        if not head.startswith(NPY_MAGIC):
            refuse_pickle(head, where)
            raise PredictionError("corrupt_file", f"{where} is not a .npy array")
        fp.seek(0)
        dtype, shape, fortran = _read_npy_header(fp, where)
        check(dtype, shape, where)
        # declared zip sizes can lie; bound the read by what the (checked) header implies
        needed = math.prod(shape) * dtype.itemsize
        if needed > max_bytes:
            raise PredictionError(
                "file_too_large", f"{where} holds {needed} bytes, over the limit of {max_bytes}"
            )
        data = fp.read(needed)
    if len(data) < needed:
        raise _truncated(where, needed, len(data))
    flat = np.frombuffer(data, dtype=dtype, count=math.prod(shape))
    return RawArray(flat.reshape(shape, order="F" if fortran else "C"), where)


def _decode_text(path: Path, fmt: str) -> str:
    raw = path.read_bytes()
    refuse_pickle(raw[:2], f"the {fmt} file")
    try:
        return raw.decode("utf-8-sig")  # tolerate the BOM that spreadsheet tools write
    except UnicodeDecodeError as exc:
        raise PredictionError(
            "corrupt_file", f"the {fmt} file is not UTF-8 text (bad byte at offset {exc.start})"
        ) from exc


def _json_type(value: object) -> str:
    names = {
        bool: "true/false",
        str: "a string",
        type(None): "null",
        dict: "an object",
        list: "a list",
        float: "a number with a decimal point",
        int: "an integer",
    }
    return names.get(type(value), type(value).__name__)


def _array_or_overflow(rows: list[Any], dtype: type, first_line: int | None) -> np.ndarray:
    """np.array(rows), turning integers too big for the dtype into an error naming the row."""
    try:
        return np.array(rows, dtype=dtype)
    except OverflowError:
        limit = 2**63 if dtype is np.int64 else float(np.finfo(np.float64).max)
        for i, row in enumerate(rows):
            for value in row if isinstance(row, list) else [row]:
                if abs(value) >= limit:
                    code = "class_out_of_range" if dtype is np.int64 else "not_finite"
                    shown = str(value) if len(str(value)) <= 30 else f"{str(value)[:20]}..."
                    raise PredictionError(
                        code,
                        f"{row_name(i, first_line)} has the value {shown}, which is far "
                        "too large" + (" to be a class id" if dtype is np.int64 else ""),
                    ) from None
        raise


def read_json(path: Path, *, size: int, max_bytes: int, check: LayoutCheck) -> RawArray:
    text = _decode_text(path, ".json")
    if not text.strip():
        raise PredictionError("empty_file", "the .json file is empty")
    constants: list[str] = []

    def on_constant(name: str) -> float:  # NaN, Infinity, -Infinity: remember, report by row
        constants.append(name)
        return float(name)

    try:
        data = json.loads(text, parse_constant=on_constant)
    except RecursionError as exc:
        raise PredictionError("corrupt_file", "the .json file is nested too deeply") from exc
    except json.JSONDecodeError as exc:  # its message names the line and column
        raise PredictionError("corrupt_file", f"the .json file is not valid JSON ({exc})") from exc
    except ValueError as exc:  # an integer longer than Python's 4300-digit conversion limit
        raise PredictionError(
            "corrupt_file", "the .json file holds a number with thousands of digits"
        ) from exc
    where = "the .json file"
    if isinstance(data, dict):
        if not data:
            raise PredictionError("empty_file", "the .json file holds an empty object")
        key = choose_key(list(data), "the JSON object")
        data, where = data[key], f"the list under key '{key}' in the .json file"
    if not isinstance(data, list):
        raise PredictionError(
            "wrong_shape",
            f"{where} must be a list with one entry per example, not {_json_type(data)}",
        )
    if not data:
        raise PredictionError("empty_file", f"{where} is an empty list")
    if constants:
        for i, row in enumerate(data):
            for value in row if isinstance(row, list) else [row]:
                if isinstance(value, float) and not math.isfinite(value):
                    raise PredictionError(
                        "not_finite", f"{row_name(i)} holds {value}, which is not finite"
                    )
    return RawArray(_json_rows(data, where), where)


def _json_rows(rows: list[Any], where: str) -> np.ndarray:
    kinds = {type(row) for row in rows}  # exact types: bool is a subclass of int but not an id
    if kinds == {int}:
        return _array_or_overflow(rows, np.int64, None)
    if kinds != {list}:
        first = type(rows[0])
        if first in (int, list):
            i = next(i for i, row in enumerate(rows) if type(row) is not first)
            raise PredictionError(
                "wrong_dtype",
                f"{row_name(i)} of {where} is {_json_type(rows[i])} but row 0 is "
                f"{_json_type(rows[0])}; give either one class id or one list per row",
            )
        raise PredictionError(
            "wrong_dtype",
            f"{row_name(0)} of {where} is {_json_type(rows[0])}; expected an integer class id "
            "or a list of numbers",
        )
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise PredictionError(
                "wrong_shape",
                f"{row_name(i)} of {where} has {len(row)} values but row 0 has {width}; "
                "every row needs the same number",
            )
    if width == 0:
        raise PredictionError("wrong_shape", f"the rows of {where} are empty lists")
    cell_kinds = set(map(type, chain.from_iterable(rows)))
    if not cell_kinds <= {int, float}:
        for i, row in enumerate(rows):
            for value in row:
                if type(value) not in (int, float):
                    raise PredictionError(
                        "wrong_shape" if isinstance(value, list) else "wrong_dtype",
                        f"{row_name(i)} of {where} contains {_json_type(value)}; rows must be "
                        "flat lists of numbers",
                    )
    return _array_or_overflow(rows, np.float64 if float in cell_kinds else np.int64, None)


_INT_CELL = re.compile(r"[+-]?[0-9]+")
_FLOAT_CELL = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf|infinity)",
    re.IGNORECASE,
)
# whole-text character sets under which np.loadtxt (fast, C) agrees with the strict cell parser
_INT_TEXT = re.compile(r"[0-9,+\- \t\n]*")
_FLOAT_TEXT = re.compile(r"[0-9,+\-.eE \t\n]*")


def _is_number(cell: str) -> bool:
    return bool(_INT_CELL.fullmatch(cell) or _FLOAT_CELL.fullmatch(cell))


def read_csv(path: Path, *, size: int, max_bytes: int, check: LayoutCheck) -> RawArray:
    lines = _decode_text(path, ".csv").replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():  # trailing newlines are not rows
        lines.pop()
    if not lines:
        raise PredictionError("empty_file", "the .csv file has no rows")
    first_cells = [cell.strip() for cell in lines[0].split(",")]
    has_header = any(cell and not _is_number(cell) for cell in first_cells)
    data = lines[1:] if has_header else lines
    if not data:
        raise PredictionError("empty_file", "the .csv file has a header row but no data rows")
    first_line = 2 if has_header else 1
    array = _csv_fast(data)
    if array is None:
        array = _csv_strict(data, first_line)
    return RawArray(array, "the .csv file", first_line)


def _csv_fast(data: list[str]) -> np.ndarray | None:
    """np.loadtxt for well-formed files; None sends the file to the strict parser for errors."""
    if any(not line.strip() for line in data):
        return None
    text = "\n".join(data)
    if _INT_TEXT.fullmatch(text):
        dtype: type = np.int64
    elif _FLOAT_TEXT.fullmatch(text):
        dtype = np.float64
    else:
        return None
    try:
        return np.loadtxt(io.StringIO(text), delimiter=",", dtype=dtype, comments=None, ndmin=2)
    except (ValueError, OverflowError):
        return None


def _csv_strict(data: list[str], first_line: int) -> np.ndarray:
    rows: list[list[int | float]] = []
    any_float = False
    width = len(data[0].split(","))
    for j, line in enumerate(data):
        line_no = first_line + j
        cells = line.split(",")
        if not line.strip():
            raise PredictionError("empty_cell", f"line {line_no}, column 1 is empty (a blank line)")
        if len(cells) != width:
            raise PredictionError(
                "wrong_shape",
                f"line {line_no} has {len(cells)} columns but line {first_line} has {width}; "
                "every row needs the same number",
            )
        values: list[int | float] = []
        for column, raw in enumerate(cells, start=1):
            cell = raw.strip()
            if not cell:
                raise PredictionError("empty_cell", f"line {line_no}, column {column} is empty")
            if _INT_CELL.fullmatch(cell):
                values.append(int(cell))
            elif _FLOAT_CELL.fullmatch(cell):
                values.append(float(cell))
                any_float = True
            else:
                raise PredictionError(
                    "not_a_number",
                    f"line {line_no}, column {column}: {cell[:40]!r} is not a number "
                    "(cells must be comma-separated numbers)",
                )
        rows.append(values)
    return _array_or_overflow(rows, np.float64 if any_float else np.int64, first_line)


READERS: dict[str, Callable[..., RawArray]] = {
    ".npy": read_npy,
    ".npz": read_npz,
    ".json": read_json,
    ".csv": read_csv,
}
