"""Readers for uploaded prediction files in text formats (.json, .csv): untrusted input.

The same rules as the binary readers in `prediction_formats` hold: each returns one raw
array and where it came from, and no size the file declares is trusted before it is checked.
"""

from __future__ import annotations

import io
import json
import math
import re
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from workers.scoring.predictions.formats import (
    LayoutCheck,
    PredictionError,
    RawArray,
    choose_key,
    refuse_pickle,
    row_name,
)


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
            for j, value in enumerate(row if isinstance(row, list) else [row]):
                if abs(value) >= limit:
                    code = "class_out_of_range" if dtype is np.int64 else "not_finite"
                    shown = str(value) if len(str(value)) <= 30 else f"{str(value)[:20]}..."
                    raise PredictionError(
                        code,
                        f"{row_name(i, first_line)} has the value {shown}, which is far "
                        "too large" + (" to be a class id" if dtype is np.int64 else ""),
                        row=i, column=j,
                    ) from None
        raise


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Python's json keeps the last of two equal keys, other readers may keep the first: a
    # file that means two things to two readers is refused, naming the key.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise PredictionError("duplicate_key",
                                  f"the .json file has the key {key!r} twice in one object")
        result[key] = value
    return result


def read_json(path: Path, *, size: int, max_bytes: int, check: LayoutCheck) -> RawArray:
    text = _decode_text(path, ".json")
    if not text.strip():
        raise PredictionError("empty_file", "the .json file is empty")
    constants: list[str] = []

    def on_constant(name: str) -> float:  # NaN, Infinity, -Infinity: remember, report by row
        constants.append(name)
        return float(name)

    try:
        data = json.loads(text, parse_constant=on_constant,
                          object_pairs_hook=_refuse_duplicate_keys)
    except PredictionError:  # a duplicate key, refused by name (it is a ValueError too)
        raise
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
            for j, value in enumerate(row if isinstance(row, list) else [row]):
                if isinstance(value, float) and not math.isfinite(value):
                    raise PredictionError(
                        "not_finite", f"{row_name(i)} holds {value}, which is not finite",
                        row=i, column=j,
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
                row=i,
            )
        raise PredictionError(
            "wrong_dtype",
            f"{row_name(0)} of {where} is {_json_type(rows[0])}; expected an integer class id "
            "or a list of numbers",
            row=0,
        )
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise PredictionError(
                "wrong_shape",
                f"{row_name(i)} of {where} has {len(row)} values but row 0 has {width}; "
                "every row needs the same number",
                row=i,
            )
    if width == 0:
        raise PredictionError("wrong_shape", f"the rows of {where} are empty lists")
    cell_kinds = set(map(type, chain.from_iterable(rows)))
    if not cell_kinds <= {int, float}:
        for i, row in enumerate(rows):
            for j, value in enumerate(row):
                if type(value) not in (int, float):
                    raise PredictionError(
                        "wrong_shape" if isinstance(value, list) else "wrong_dtype",
                        f"{row_name(i)} of {where} contains {_json_type(value)}; rows must be "
                        "flat lists of numbers",
                        row=i, column=j,
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


def _int_cell(cell: str, line_no: int, column: int, row: int) -> int:
    try:
        return int(cell)
    except ValueError:  # past Python's 4,300-digit conversion limit: far past int64 and float64
        raise PredictionError(
            "not_a_number",
            f"line {line_no}, column {column}: a number with {len(cell.lstrip('+-'))} digits, "
            "far too large to be a class id or a score",
            row=row, column=column - 1,
        ) from None


def _csv_strict(data: list[str], first_line: int) -> np.ndarray:
    rows: list[list[int | float]] = []
    any_float = False
    width = len(data[0].split(","))
    for j, line in enumerate(data):
        line_no = first_line + j
        cells = line.split(",")
        if not line.strip():
            raise PredictionError("empty_cell", f"line {line_no}, column 1 is empty (a blank line)",
                                  row=j, column=0)
        if len(cells) != width:
            raise PredictionError(
                "wrong_shape",
                f"line {line_no} has {len(cells)} columns but line {first_line} has {width}; "
                "every row needs the same number",
                row=j,
            )
        values: list[int | float] = []
        for column, raw in enumerate(cells, start=1):
            cell = raw.strip()
            if not cell:
                raise PredictionError("empty_cell", f"line {line_no}, column {column} is empty",
                                      row=j, column=column - 1)
            if _INT_CELL.fullmatch(cell):
                values.append(_int_cell(cell, line_no, column, j))
            elif _FLOAT_CELL.fullmatch(cell):
                values.append(float(cell))
                any_float = True
            else:
                raise PredictionError(
                    "not_a_number",
                    f"line {line_no}, column {column}: {cell[:40]!r} is not a number "
                    "(cells must be comma-separated numbers)",
                    row=j, column=column - 1,
                )
        rows.append(values)
    return _array_or_overflow(rows, np.float64 if any_float else np.int64, first_line)
