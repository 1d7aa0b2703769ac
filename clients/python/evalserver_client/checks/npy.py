""".npy and .npz files without NumPy: the header (a Python literal, read with
`ast.literal_eval`, never run), the dtype it names, and the data of integer and floating-point
arrays decoded with `array` and `struct`, a chunk of rows at a time. The layout is NumPy's
(numpy.lib.format); a pickle is refused before anything is read, as the server refuses it.
"""

from __future__ import annotations

import array
import ast
import io
import math
import re
import struct
import sys
import tokenize
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from .arrays import DType, PredictionProblem, RawArray
from .names import choose_key

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members / an empty zip
MAX_HEADER_CHARS = 10_000  # NumPy refuses a longer header as unsafe to parse
NATIVE = "<" if sys.byteorder == "little" else ">"

LayoutCheck = Callable[[DType, tuple[int, ...], str], object]


class _Damaged(ValueError):
    """A header NumPy cannot read (the server's "truncated or damaged" message)."""


# ---------------------------------------------------------------------------- dtypes

_NUMERIC = {("i", 1): "int8", ("i", 2): "int16", ("i", 4): "int32", ("i", 8): "int64",
            ("u", 1): "uint8", ("u", 2): "uint16", ("u", 4): "uint32", ("u", 8): "uint64",
            ("f", 2): "float16", ("f", 4): "float32", ("f", 8): "float64",
            ("f", 16): "float128", ("c", 8): "complex64", ("c", 16): "complex128",
            ("c", 32): "complex256", ("b", 1): "bool"}
# NumPy's one-letter type codes and names that a hand-written header may use for a dtype
_CODES = {"b": ("i", 1), "B": ("u", 1), "h": ("i", 2), "H": ("u", 2), "i": ("i", 4),
          "I": ("u", 4), "l": ("i", 8), "L": ("u", 8), "q": ("i", 8), "Q": ("u", 8),
          "e": ("f", 2), "f": ("f", 4), "d": ("f", 8), "g": ("f", 16), "F": ("c", 8),
          "D": ("c", 16), "G": ("c", 32), "?": ("b", 1), "u": ("u", 4), "p": ("i", 8),
          "P": ("u", 8)}
_NAMES = {name: key for key, name in _NUMERIC.items()} | {"int": ("i", 8), "float": ("f", 8),
                                                          "complex": ("c", 16)}
_TYPESTR = re.compile(r"([<>|=]?)([biufcmMOSUVa?])(\d*)(?:\[(\d*)([a-zA-Zμ]+)\])?")
_UNITS = {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"}


def _numeric(kind: str, size: int, order: str) -> DType:
    if (kind, size) not in _NUMERIC:
        raise TypeError(f"data type {kind}{size} not understood")
    swapped = order not in ("", "|", "=", NATIVE) and size > 1
    name = f">{kind}{size}" if swapped and NATIVE == "<" else _NUMERIC[(kind, size)]
    if swapped and NATIVE == ">":
        name = f"<{kind}{size}"
    byteorder = NATIVE if order in ("", "|", "=") else order
    return DType(kind, size, name, byteorder=byteorder)


def _simple(descr: str) -> DType:
    """A dtype string: NumPy's `<f4` form (what numpy.save writes), a type code, or a name."""
    if descr in _NAMES:
        return _numeric(*_NAMES[descr], "")
    if descr in ("object", "O", "|O", "<O", ">O", "=O", "O8", "|O8"):
        return DType("O", 8, "object", has_object=True)
    match = _TYPESTR.fullmatch(descr)
    if match is None:
        if descr[1:] in _CODES and descr[:1] in "<>|=":
            return _numeric(*_CODES[descr[1:]], descr[:1])
        if descr in _CODES:
            return _numeric(*_CODES[descr], "")
        raise TypeError(f"data type {descr!r} not understood")
    order, letter, digits, multiple, unit = match.groups()
    native = order in ("", "|", "=") or order == NATIVE
    if letter in "iufc" and digits:
        return _numeric(letter, int(digits), order)
    if letter in "b?" and digits in ("", "1") and (letter == "?" or digits):
        return _numeric("b", 1, order)
    if not digits and letter in _CODES:
        return _numeric(*_CODES[letter], order)
    if letter in "SaV":
        kind = "V" if letter == "V" else "S"
        return DType(kind, int(digits or 0), f"|{kind}{int(digits or 0)}")
    if letter == "U":
        size = int(digits or 0)
        return DType("U", 4 * size, f"{NATIVE if native else order}U{size}")
    if letter == "c" and not digits:  # NumPy's code for one byte of text
        return DType("S", 1, "|S1")
    if letter in "Mm" and digits in ("", "8") and (unit is None or unit in _UNITS):
        suffix = "" if unit is None or unit == "generic" else f"[{multiple}{unit}]"
        base = "datetime64" if letter == "M" else "timedelta64"
        name = base + suffix if native else f"{order}{letter}8{suffix}"
        return DType(letter, 8, name)
    if letter == "O":
        return DType("O", 8, "object", has_object=True)
    raise TypeError(f"data type {descr!r} not understood")


def parse_descr(descr: Any) -> DType:
    """The dtype a header's `descr` names, as numpy.lib.format.descr_to_dtype reads it; raises
    TypeError or ValueError where NumPy would refuse it."""
    if isinstance(descr, str):
        return _simple(descr)
    if isinstance(descr, tuple):  # (base, subarray shape): NumPy's kind V
        base = parse_descr(descr[0])
        return DType("V", 0, repr(descr), has_object=base.has_object)
    if not isinstance(descr, list):
        raise TypeError(f"{descr!r} is not a dtype")
    objects = False
    for field in descr:
        if not isinstance(field, tuple) or len(field) not in (2, 3):
            raise TypeError(f"bad field {field!r}")
        objects = objects or parse_descr(field[1]).has_object
    return DType("V", 0, repr(descr), structured=True, has_object=objects)


# ---------------------------------------------------------------------------- the header


def refuse_pickle(head: bytes, what: str) -> None:
    # pickle protocols 2..5 start with PROTO (0x80) and the protocol number
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        raise PredictionProblem(
            "pickle_refused",
            f"{what} is a Python pickle, not a NumPy array; pickles are refused because loading "
            "one can run arbitrary code. Save plain arrays with numpy.save or numpy.savez.")


def _bad_magic(head: bytes, what: str, fmt: str) -> PredictionProblem:
    refuse_pickle(head, what)
    if head[:4] in ZIP_MAGICS:
        return PredictionProblem(
            "corrupt_file", f"{what} is a zip archive (.npz), not a .npy file; rename it to .npz")
    if head.startswith(NPY_MAGIC):
        return PredictionProblem(
            "corrupt_file", f"{what} is a single .npy array, not a .npz archive; rename it to .npy")
    return PredictionProblem("corrupt_file", f"{what} is not a valid {fmt} file")


def _read_exactly(fp: IO[bytes], size: int) -> bytes:
    data = b""
    while len(data) < size:
        block = fp.read(size - len(data))
        if not block:
            raise _Damaged("ran out of data")
        data += block
    return data


def _python2_header(text: str) -> str:
    """NumPy's second try at a header: without the `L` of Python 2's long integers."""
    tokens, after_number = [], False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if not (after_number and token.type == tokenize.NAME and token.string == "L"):
            tokens.append(token)
        after_number = token.type == tokenize.NUMBER
    return tokenize.untokenize(tokens)


def _header_dict(fp: IO[bytes], where: str) -> dict[str, Any]:
    magic = _read_exactly(fp, 8)
    version = (magic[6], magic[7])
    if version not in ((1, 0), (2, 0)):
        raise PredictionProblem(
            "corrupt_file", f"{where} uses .npy format version {version}, which is not accepted")
    length_format = "<H" if version == (1, 0) else "<I"
    (length,) = struct.unpack(length_format, _read_exactly(fp, struct.calcsize(length_format)))
    text = _read_exactly(fp, length).decode("latin1")
    if len(text) > MAX_HEADER_CHARS:
        raise _Damaged("header too long")
    try:
        found = ast.literal_eval(text)
    except SyntaxError:
        found = ast.literal_eval(_python2_header(text))
    if not isinstance(found, dict) or found.keys() != {"descr", "fortran_order", "shape"}:
        raise _Damaged("not a header")
    if not isinstance(found["shape"], tuple) or \
            not all(isinstance(n, int) for n in found["shape"]):
        raise _Damaged("bad shape")
    if not isinstance(found["fortran_order"], bool):
        raise _Damaged("bad fortran_order")
    return found


def read_header(fp: IO[bytes], where: str) -> tuple[DType, tuple[int, ...], bool]:
    try:
        found = _header_dict(fp, where)
        dtype = parse_descr(found["descr"])
    except PredictionProblem:
        raise
    except (ValueError, TypeError, SyntaxError, OSError, EOFError, RecursionError,
            MemoryError, tokenize.TokenError) as exc:
        raise PredictionProblem(
            "corrupt_file", f"{where} is truncated or damaged: its .npy header cannot be read"
        ) from exc
    return dtype, tuple(int(n) for n in found["shape"]), bool(found["fortran_order"])


def _truncated(where: str, needed: int, present: int) -> PredictionProblem:
    return PredictionProblem(
        "corrupt_file",
        f"{where} is truncated: its .npy header promises {needed} bytes of data "
        f"but only {present} are there")


# ---------------------------------------------------------------------------- the data

_ARRAY_CODES = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q",
                ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q",
                ("f", 4): "f", ("f", 8): "d"}


def _x87(raw: bytes) -> float:
    """An 80-bit x87 extended float (NumPy's float128 on x86), as the nearest Python float
    (beyond float64's range: an infinity)."""
    mantissa = int.from_bytes(raw[:8], "little")
    top = int.from_bytes(raw[8:10], "little")
    sign, exponent = -1.0 if top >> 15 else 1.0, top & 0x7FFF
    if exponent == 0x7FFF:
        return sign * math.inf if mantissa << 1 & (2**64 - 1) == 0 else math.nan
    try:
        return sign * math.ldexp(mantissa, max(exponent, 1) - 16383 - 63)
    except OverflowError:
        return sign * math.inf


def decode(data: bytes, dtype: DType) -> Sequence[float]:
    """The values of an integer or floating-point array's bytes."""
    swapped = dtype.byteorder != NATIVE
    if dtype.kind == "f" and dtype.itemsize == 2:
        return struct.unpack(f"{dtype.byteorder}{len(data) // 2}e", data)
    if dtype.kind == "f" and dtype.itemsize == 16:
        step = 16
        return [_x87(data[i:i + step][::-1][:10] if swapped else data[i:i + 10])
                for i in range(0, len(data), step)]
    values = array.array(_ARRAY_CODES[(dtype.kind, dtype.itemsize)])
    values.frombytes(data)
    if swapped:
        values.byteswap()
    return values


def _rows_reader(read: Callable[[int, int], bytes], dtype: DType, shape: tuple[int, ...],
                 fortran: bool) -> Callable[[int, int], Sequence[float]]:
    """rows(start, stop): those rows' values in row-major order, from `read(offset, length)`
    (offsets from the start of the data)."""
    n, k, size = shape[0], shape[1] if len(shape) == 2 else 1, dtype.itemsize

    def rows(start: int, stop: int) -> Sequence[float]:
        if not fortran or k == 1:
            return decode(read(start * k * size, (stop - start) * k * size), dtype)
        columns = [decode(read((c * n + start) * size, (stop - start) * size), dtype)
                   for c in range(k)]
        return [column[r] for r in range(stop - start) for column in columns]

    return rows


def read_npy(path: Path, *, size: int, check: LayoutCheck) -> RawArray:
    where = "the .npy file"
    with open(path, "rb") as fp:
        head = fp.read(8)
        if not head.startswith(NPY_MAGIC):
            raise _bad_magic(head, where, ".npy")
        fp.seek(0)
        dtype, shape, fortran = read_header(fp, where)
        offset = fp.tell()
    check(dtype, shape, where)  # object dtypes, wrong shapes, empty arrays: refused here
    needed = math.prod(shape) * dtype.itemsize
    if size - offset < needed:
        raise _truncated(where, needed, size - offset)
    if min(shape) < 0:  # NumPy cannot make the array: negative dimensions
        raise PredictionProblem("corrupt_file", f"{where} could not be read as a .npy array")

    def read(start: int, length: int) -> bytes:
        with open(path, "rb") as fp:
            fp.seek(offset + start)
            return fp.read(length)

    return RawArray(dtype, shape, where, _rows_reader(read, dtype, shape, fortran))


def read_npz(path: Path, *, size: int, check: LayoutCheck) -> RawArray:
    with open(path, "rb") as fp:
        head = fp.read(8)
    if head[:4] not in ZIP_MAGICS:
        raise _bad_magic(head, "the .npz file", ".npz (zip)")
    try:
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if not info.is_dir()]
            if not members:
                raise PredictionProblem("empty_file", "the .npz file holds no arrays")
            by_key = {info.filename.removesuffix(".npy"): info for info in members}
            if len(by_key) != len(members):
                raise PredictionProblem("corrupt_file",
                                        "the .npz file has two arrays with one name")
            key = choose_key(list(by_key), "the .npz file")
            return _read_npz_member(archive, by_key[key], key, check)
    except PredictionProblem:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            RuntimeError, ValueError) as exc:  # RuntimeError: an encrypted member
        raise PredictionProblem(
            "corrupt_file", "the .npz file is truncated or damaged: it is not a readable zip"
        ) from exc


def _read_npz_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, key: str,
                     check: LayoutCheck) -> RawArray:
    where = f"array '{key}' in the .npz file"
    with archive.open(info) as fp:
        head = fp.read(8)
        if not head.startswith(NPY_MAGIC):
            refuse_pickle(head, where)
            raise PredictionProblem("corrupt_file", f"{where} is not a .npy array")
        fp.seek(0)
        dtype, shape, fortran = read_header(fp, where)
        check(dtype, shape, where)
        needed = math.prod(shape) * dtype.itemsize
        data = fp.read(needed)
    if len(data) < needed:
        raise _truncated(where, needed, len(data))
    if min(shape) < 0:
        raise PredictionProblem("corrupt_file", "the .npz file is truncated or damaged: it is "
                                "not a readable zip")
    return RawArray(dtype, shape, where, _rows_reader(
        lambda start, length: data[start:start + length], dtype, shape, fortran))
