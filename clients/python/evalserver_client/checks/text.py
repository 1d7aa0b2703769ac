""".json and .csv predictions files, read as the server reads them: a list of class ids, of id
lists or of score rows (JSON, or an object holding one under a known key), or rows of
comma-separated numbers with an optional header row (CSV). Whole numbers give int64 arrays,
any number with a point or an exponent float64 ones, as NumPy would make them."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from .arrays import FLOAT64, INT64, DType, PredictionProblem, RawArray, row_name
from .names import choose_key
from .npy import LayoutCheck, refuse_pickle

INT64_LIMIT = 2**63
FLOAT64_MAX = sys.float_info.max


def _decode_text(path: Path, fmt: str) -> str:
    raw = path.read_bytes()
    refuse_pickle(raw[:2], f"the {fmt} file")
    try:
        return raw.decode("utf-8-sig")  # tolerate the BOM that spreadsheet tools write
    except UnicodeDecodeError as exc:
        raise PredictionProblem(
            "corrupt_file", f"the {fmt} file is not UTF-8 text (bad byte at offset {exc.start})"
        ) from exc


def _json_type(value: object) -> str:
    names = {bool: "true/false", str: "a string", type(None): "null", dict: "an object",
             list: "a list", float: "a number with a decimal point", int: "an integer"}
    return names.get(type(value), type(value).__name__)


def _typed(rows: list[Any], dtype: DType, first_line: int | None) -> list[Any]:
    """The rows as NumPy would store them in `dtype` (int64 or float64); a number it cannot
    store is refused as the server refuses it (the first one at least as large as the limit)."""
    flat = list(chain.from_iterable(row if isinstance(row, list) else [row] for row in rows))
    if dtype is INT64:
        overflow = any(not -INT64_LIMIT <= value < INT64_LIMIT for value in flat)
        limit: float = INT64_LIMIT
    else:
        overflow = any(isinstance(value, int) and abs(value) > FLOAT64_MAX and
                       _too_large_for_float(value) for value in flat)
        limit = FLOAT64_MAX
    if overflow:
        for i, row in enumerate(rows):
            for j, value in enumerate(row if isinstance(row, list) else [row]):
                if abs(value) >= limit:
                    code = "class_out_of_range" if dtype is INT64 else "not_finite"
                    shown = str(value) if len(str(value)) <= 30 else f"{str(value)[:20]}..."
                    raise PredictionProblem(
                        code,
                        f"{row_name(i, first_line)} has the value {shown}, which is far "
                        "too large" + (" to be a class id" if dtype is INT64 else ""),
                        row=i, column=j)
    if dtype is FLOAT64:
        return [[float(v) for v in row] if isinstance(row, list) else float(row) for row in rows]
    return rows


def _too_large_for_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # a file that means two things to two JSON readers (the first or the last of two equal
    # keys) is refused, naming the key
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise PredictionProblem("duplicate_key",
                                    f"the .json file has the key {key!r} twice in one object")
        result[key] = value
    return result


def read_json(path: Path, *, size: int, check: LayoutCheck) -> RawArray:
    text = _decode_text(path, ".json")
    if not text.strip():
        raise PredictionProblem("empty_file", "the .json file is empty")
    constants: list[str] = []

    def on_constant(name: str) -> float:  # NaN, Infinity, -Infinity: remember, report by row
        constants.append(name)
        return float(name)

    try:
        data = json.loads(text, parse_constant=on_constant,
                          object_pairs_hook=_refuse_duplicate_keys)
    except PredictionProblem:
        raise
    except RecursionError as exc:
        raise PredictionProblem("corrupt_file", "the .json file is nested too deeply") from exc
    except json.JSONDecodeError as exc:  # its message names the line and column
        raise PredictionProblem("corrupt_file",
                                f"the .json file is not valid JSON ({exc})") from exc
    except ValueError as exc:  # an integer longer than Python's 4300-digit conversion limit
        raise PredictionProblem(
            "corrupt_file", "the .json file holds a number with thousands of digits") from exc
    where = "the .json file"
    if isinstance(data, dict):
        if not data:
            raise PredictionProblem("empty_file", "the .json file holds an empty object")
        key = choose_key(list(data), "the JSON object")
        data, where = data[key], f"the list under key '{key}' in the .json file"
    if not isinstance(data, list):
        raise PredictionProblem(
            "wrong_shape",
            f"{where} must be a list with one entry per example, not {_json_type(data)}")
    if not data:
        raise PredictionProblem("empty_file", f"{where} is an empty list")
    if constants:
        for i, row in enumerate(data):
            for j, value in enumerate(row if isinstance(row, list) else [row]):
                if isinstance(value, float) and not math.isfinite(value):
                    raise PredictionProblem(
                        "not_finite", f"{row_name(i)} holds {value}, which is not finite",
                        row=i, column=j)
    return _json_rows(data, where)


def _json_rows(rows: list[Any], where: str) -> RawArray:
    kinds = {type(row) for row in rows}  # exact types: bool is a subclass of int but not an id
    if kinds == {int}:
        return _raw(_typed(rows, INT64, None), INT64, where)
    if kinds != {list}:
        first = type(rows[0])
        if first in (int, list):
            i = next(i for i, row in enumerate(rows) if type(row) is not first)
            raise PredictionProblem(
                "wrong_dtype",
                f"{row_name(i)} of {where} is {_json_type(rows[i])} but row 0 is "
                f"{_json_type(rows[0])}; give either one class id or one list per row", row=i)
        raise PredictionProblem(
            "wrong_dtype",
            f"{row_name(0)} of {where} is {_json_type(rows[0])}; expected an integer class id "
            "or a list of numbers", row=0)
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise PredictionProblem(
                "wrong_shape",
                f"{row_name(i)} of {where} has {len(row)} values but row 0 has {width}; "
                "every row needs the same number", row=i)
    if width == 0:
        raise PredictionProblem("wrong_shape", f"the rows of {where} are empty lists")
    cell_kinds = set(map(type, chain.from_iterable(rows)))
    if not cell_kinds <= {int, float}:
        for i, row in enumerate(rows):
            for j, value in enumerate(row):
                if type(value) not in (int, float):
                    raise PredictionProblem(
                        "wrong_shape" if isinstance(value, list) else "wrong_dtype",
                        f"{row_name(i)} of {where} contains {_json_type(value)}; rows must be "
                        "flat lists of numbers", row=i, column=j)
    dtype = FLOAT64 if float in cell_kinds else INT64
    return _raw(_typed(rows, dtype, None), dtype, where)


def _raw(rows: list[Any], dtype: DType, where: str, first_line: int | None = None) -> RawArray:
    """A RawArray over a list of numbers ([N]) or of equal rows ([N, k])."""
    two_d = isinstance(rows[0], list)

    def values(start: int, stop: int) -> Sequence[float]:
        part = rows[start:stop]
        return list(chain.from_iterable(part)) if two_d else part

    shape = (len(rows), len(rows[0])) if two_d else (len(rows),)
    return RawArray(dtype, shape, where, values, first_line)


_INT_CELL = re.compile(r"[+-]?[0-9]+")
_FLOAT_CELL = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf|infinity)",
    re.IGNORECASE)
# whole-text character sets under which the server reads the file at C speed (np.loadtxt)
_INT_TEXT = re.compile(r"[0-9,+\- \t\n]*")
_FLOAT_TEXT = re.compile(r"[0-9,+\-.eE \t\n]*")


def _is_number(cell: str) -> bool:
    return bool(_INT_CELL.fullmatch(cell) or _FLOAT_CELL.fullmatch(cell))


def read_csv(path: Path, *, size: int, check: LayoutCheck) -> RawArray:
    lines = _decode_text(path, ".csv").replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():  # trailing newlines are not rows
        lines.pop()
    if not lines:
        raise PredictionProblem("empty_file", "the .csv file has no rows")
    first_cells = [cell.strip() for cell in lines[0].split(",")]
    has_header = any(cell and not _is_number(cell) for cell in first_cells)
    data = lines[1:] if has_header else lines
    if not data:
        raise PredictionProblem("empty_file",
                                "the .csv file has a header row but no data rows")
    first_line = 2 if has_header else 1
    fast = _csv_fast(data)
    rows, dtype = fast if fast is not None else _csv_strict(data, first_line)
    return _raw(rows, dtype, "the .csv file", first_line)


def _csv_fast(data: list[str]) -> tuple[list[Any], DType] | None:
    """What the server's fast reader (np.loadtxt) makes of a well-formed file; None sends the
    file to the strict reader, as on the server. The two agree but on one point: a whole number
    too large for a float64 in a file of floats is an infinity here (refused as not finite)."""
    if any(not line.strip() for line in data):
        return None
    text = "\n".join(data)
    if _INT_TEXT.fullmatch(text):
        dtype, cell = INT64, _INT_CELL
    elif _FLOAT_TEXT.fullmatch(text):
        dtype, cell = FLOAT64, _FLOAT_CELL
    else:
        return None
    rows = [[part.strip() for part in line.split(",")] for line in data]
    if any(len(row) != len(rows[0]) for row in rows) or \
            not all(cell.fullmatch(part) for part in chain.from_iterable(rows)):
        return None
    if dtype is FLOAT64:
        return [[float(part) for part in row] for row in rows], dtype
    if any(len(part.lstrip("+-")) > 19 for part in chain.from_iterable(rows)):
        return None  # past int64 (and past int()'s digit limit at 4,300): the strict reader
    numbers = [[int(part) for part in row] for row in rows]
    if any(not -INT64_LIMIT <= value < INT64_LIMIT for value in chain.from_iterable(numbers)):
        return None
    return numbers, dtype


def _int_cell(cell: str, line_no: int, column: int, row: int) -> int:
    try:
        return int(cell)
    except ValueError:  # past Python's 4,300-digit conversion limit: far past int64 and float64
        raise PredictionProblem(
            "not_a_number",
            f"line {line_no}, column {column}: a number with {len(cell.lstrip('+-'))} digits, "
            "far too large to be a class id or a score", row=row, column=column - 1) from None


def _csv_strict(data: list[str], first_line: int) -> tuple[list[Any], DType]:
    rows: list[list[int | float]] = []
    any_float = False
    width = len(data[0].split(","))
    for j, line in enumerate(data):
        line_no = first_line + j
        cells = line.split(",")
        if not line.strip():
            raise PredictionProblem("empty_cell",
                                    f"line {line_no}, column 1 is empty (a blank line)",
                                    row=j, column=0)
        if len(cells) != width:
            raise PredictionProblem(
                "wrong_shape",
                f"line {line_no} has {len(cells)} columns but line {first_line} has {width}; "
                "every row needs the same number", row=j)
        values: list[int | float] = []
        for column, raw in enumerate(cells, start=1):
            cell = raw.strip()
            if not cell:
                raise PredictionProblem("empty_cell", f"line {line_no}, column {column} is empty",
                                        row=j, column=column - 1)
            if _INT_CELL.fullmatch(cell):
                values.append(_int_cell(cell, line_no, column, j))
            elif _FLOAT_CELL.fullmatch(cell):
                values.append(float(cell))
                any_float = True
            else:
                raise PredictionProblem(
                    "not_a_number",
                    f"line {line_no}, column {column}: {cell[:40]!r} is not a number "
                    "(cells must be comma-separated numbers)", row=j, column=column - 1)
        rows.append(values)
    dtype = FLOAT64 if any_float else INT64
    return _typed(rows, dtype, first_line), dtype
