"""The one CSV writer of every download (plots, audit histograms, the leaderboard).

Spreadsheets run a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return as a
formula, and model names are chosen by anyone who submits: `=HYPERLINK("http://…")` would
become a live link in a maintainer's spreadsheet. As the OWASP guidance on CSV injection
says, such text cells are written with a leading single quote, which spreadsheets show as
text; numbers (a negative residual) are left as they are, so the file still reads back
exactly.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _number(value: Any) -> str:
    if value is None:
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(value: Any) -> str:
    """A value as CSV text: floats by `repr` (they read back exactly), None as an empty
    cell, and text that a spreadsheet would run as a formula quoted with a leading '."""
    if not isinstance(value, str):
        return _number(value)
    if value.startswith(_FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def csv_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """A header row and data rows as CSV lines (LF ends), every cell through `csv_cell`, one
    at a time: a download streams them (StreamingHttpResponse) without the whole file."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in itertools.chain([header], rows):
        writer.writerow([csv_cell(v) for v in row])
        yield out.getvalue()
        out.seek(0)
        out.truncate()


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A header row and data rows as CSV (LF line ends), every cell through `csv_cell`."""
    return "".join(csv_lines(header, rows))
