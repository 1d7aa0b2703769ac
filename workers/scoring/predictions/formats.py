"""Readers for uploaded prediction files (.npy, .npz, .json, .csv): untrusted input.

Each reader turns a file into one raw array and says where it came from; deciding whether the
array holds class ids or scores, and every check on its values, is left to `predictions.py`.
Two rules hold throughout: nothing that can run code is ever loaded (pickles are refused before
NumPy sees them), and nothing is allocated on the strength of a size the file declares until
that size has been checked against the caller's limit.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

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
    """A problem with an uploaded prediction file, explained for the person who uploaded it.

    `row` and `column` (0-based: the example's row of the array, the column of a score matrix
    or the position in a row of top-k ids) locate the problem when it sits in one cell or row;
    the message says the same in words (with the file's line for CSV)."""

    def __init__(self, code: str, message: str, row: int | None = None,
                 column: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.row = None if row is None else int(row)
        self.column = None if column is None else int(column)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"PredictionError({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[type[PredictionError], tuple[str, str, int | None, int | None]]:
        # Celery pickles exceptions; the default reduce would call __init__ with one argument
        return (PredictionError, (self.code, self.message, self.row, self.column))


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
