"""Checking a predictions file on the participant's machine, by the server's rules, before it is
uploaded: `check_file(path, num_examples=..., num_classes=...)`.

The server parses every upload with its own parser (the evalserver checkout's
`workers/scoring/predictions/`; the rules: the server's docs/participants/scoring-locally.md
and docs/metrics.md §1.1). This package applies the same rules, in the same order and with
the same error codes and messages, in plain Python: no NumPy, so that it runs wherever the
client installs. Formats: .npy and .npz (NumPy's own file layout, read with `struct` and
`array`; pickles refused, as the server does), .json and .csv.

What it cannot know is the server's upload limit (`EVALSERVER_MAX_UPLOAD_BYTES`, 512 MiB by
default): sizes are not checked. Its agreement with the server's parser is tested on the
server's hostile-file corpus (the evalserver checkout's tests/clients/test_checks_agree.py).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from .arrays import Content, PredictionProblem, RawArray, check_layout, check_values, row_name
from .npy import read_npy, read_npz
from .text import read_csv, read_json

__all__ = ["EXTENSIONS", "Content", "PredictionProblem", "check_file", "row_name"]

READERS = {".npy": read_npy, ".npz": read_npz, ".json": read_json, ".csv": read_csv}
EXTENSIONS: tuple[str, ...] = tuple(READERS)  # the server's SUPPORTED_EXTENSIONS


def check_file(path: str | os.PathLike[str], *, num_examples: int, num_classes: int,
               filename: str | None = None) -> Content:
    """What the file holds, when the server would accept it for an example set of
    `num_examples` examples over `num_classes` classes; raises PredictionProblem (its code and
    message the server's) when it would refuse it. `filename`'s extension picks the format, as
    the uploaded file's name does on the server; without it `path`'s."""
    if num_examples < 1 or num_classes < 1:
        raise ValueError("num_examples and num_classes must be positive")
    path = Path(path)
    extension = Path(filename if filename is not None else path.name).suffix.lower()
    if extension not in READERS:
        shown = f"'{extension}'" if extension else "no extension"
        raise PredictionProblem(
            "unsupported_format",
            f"files with {shown} are not accepted; use one of {', '.join(EXTENSIONS)}")
    size = path.stat().st_size
    if size == 0:
        raise PredictionProblem("empty_file", "the file is empty (0 bytes)")
    check = functools.partial(check_layout, num_examples=num_examples, num_classes=num_classes)
    raw: RawArray = READERS[extension](path, size=size, check=check)
    kind = check(raw.dtype, raw.shape, raw.where)
    return check_values(raw, kind, num_classes, extension)
