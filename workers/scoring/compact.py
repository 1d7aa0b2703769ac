"""A submission's compact file, and reading a few rows of an array stored in an
uncompressed .npz without loading it all.

The compact file (docs/operators/many-machines.md, "Files in object storage") is one .npz a
submission: each example set's arrays under `<example set>/<array>` (`topk`, then `topk_scores`,
`scores`, `scores_kind` where kept). One file, not one per example set: on an object store each
file is a request. A file stored before that layout holds one example set's arrays under their
plain names; `compact_member_names` gives the names an array may have.

A worker re-scoring after one review decision needs each stored submission's top-k at a few
examples only; loading every 500 kB compact file for that would dominate the time. `np.savez`
stores members uncompressed, so a member's rows sit at a fixed offset inside the zip file.
"""

from __future__ import annotations

import ast
import struct
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np


class SeekableReader(Protocol):
    """What is read from: an open file, a BytesIO, a Django `File` from a storage."""

    def read(self, size: int = -1, /) -> bytes: ...
    def seek(self, offset: int, whence: int = 0, /) -> int: ...
    def tell(self) -> int: ...


def compact_arrays(example_sets: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The members of a submission's compact file (for `np.savez`), example set by example set in
    the given order, each one's `topk` first."""
    members: dict[str, np.ndarray] = {}
    for example_set, arrays in example_sets.items():
        for name in ("topk", *(n for n in arrays if n != "topk")):
            members[f"{example_set}/{name}"] = arrays[name]
    return members


def compact_member_names(example_set: str, array: str) -> tuple[str, str]:
    """The names an example set's `array` may have in a compact file, for `npz_member_rows`
    (which reads members without listing them)."""
    return f"{example_set}/{array}", array


_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # the zip local file header, 30 bytes
_MAGIC = b"\x93NUMPY"
# The first bytes of a file hold the zip header, the member name and the .npy header.
_HEAD_BYTES = 512
# .npy header text -> (shape, dtype): every compact file of an example set has the same one, so
# it is parsed once per process, not once per file.
_PARSED: dict[bytes, tuple[tuple[int, ...], np.dtype]] = {}


def _parse_npy_header(text: bytes, shown: object, member: str) -> tuple[tuple[int, ...], np.dtype]:
    parsed = _PARSED.get(text)
    if parsed is None:
        header = ast.literal_eval(text.decode("latin1"))
        if not isinstance(header, dict) or header.get("fortran_order") is not False:
            raise ValueError(f"{shown}: {member} is not a C-ordered plain array")
        dtype = np.dtype(header["descr"])
        if dtype.hasobject:
            raise ValueError(f"{shown}: {member} is not a C-ordered plain array")
        parsed = (tuple(int(n) for n in header["shape"]), dtype)
        if len(_PARSED) < 64:
            _PARSED[text] = parsed
    return parsed


def _first_member_data(head: bytes, members: Sequence[str]) -> tuple[str, int, bytes] | None:
    """(its name, offset of the .npy data, its header text) when one of `members` is the
    archive's first entry, stored, and its headers fit in `head`; None otherwise."""
    if len(head) < _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack_from(head)
    name_length, extra_length = fields[-2], fields[-1]
    start = _LOCAL_HEADER.size + name_length + extra_length
    first = head[_LOCAL_HEADER.size:_LOCAL_HEADER.size + name_length]
    member = next((m for m in members if first == f"{m}.npy".encode()), None)
    if fields[0] != b"PK\x03\x04" or fields[4] != zipfile.ZIP_STORED or member is None:
        return None
    found = _npy_header(head, start)
    return None if found is None else (member, *found)


def _npy_header(head: bytes, start: int) -> tuple[int, bytes] | None:
    if head[start:start + 6] != _MAGIC or len(head) < start + 12:
        return None
    major = head[start + 6]
    if major == 1:
        length, text_start = struct.unpack_from("<H", head, start + 8)[0], start + 10
    else:
        length, text_start = struct.unpack_from("<I", head, start + 8)[0], start + 12
    if len(head) < text_start + length:
        return None
    return text_start + length, head[text_start:text_start + length]


def _slow_member_data(handle: SeekableReader, shown: object,
                      members: Sequence[str]) -> tuple[str, int, bytes]:
    handle.seek(0)
    with zipfile.ZipFile(handle) as archive:  # leaves the handle open: it did not open it
        stored = set(archive.namelist())
        member = next((m for m in members if f"{m}.npy" in stored), None)
        if member is None:
            raise KeyError(f"{shown}: no member named {' or '.join(members)}")
        info = archive.getinfo(f"{member}.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{shown}: {member} is compressed; rows cannot be read in place")
    handle.seek(info.header_offset)
    head = handle.read(_HEAD_BYTES * 8)
    fields = _LOCAL_HEADER.unpack_from(head)
    if fields[0] != b"PK\x03\x04":
        raise ValueError(f"{shown}: not a zip local header at {info.header_offset}")
    found = _npy_header(head, _LOCAL_HEADER.size + fields[-2] + fields[-1])
    if found is None:
        raise ValueError(f"{shown}: {member} has no readable .npy header")
    return member, info.header_offset + found[0], found[1]


def npz_member_rows(source: Path | SeekableReader, member: str | Sequence[str],
                    rows: np.ndarray) -> np.ndarray:
    """`np.load(source)[member][rows]` for an uncompressed .npz, reading only those rows;
    `source` is a path or a seekable binary file (a stored file opened by the web side).
    `member`: its name, or the names it may have, the first the file holds being read
    (`compact_member_names`). KeyError when it holds none."""
    members = (member,) if isinstance(member, str) else tuple(member)
    if isinstance(source, Path):
        with open(source, "rb") as handle:
            return _member_rows(handle, source, members, rows)
    return _member_rows(source, getattr(source, "name", "<file>"), members, rows)


def _member_rows(handle: SeekableReader, shown: object, members: Sequence[str],
                 rows: np.ndarray) -> np.ndarray:
    # Fast path: the member is the first entry (the worker writes a `topk` first), so one
    # read from the start of the file holds every header; no zip directory is parsed.
    handle.seek(0)
    found = _first_member_data(handle.read(_HEAD_BYTES), members)
    member, data_start, text = (found if found is not None
                                else _slow_member_data(handle, shown, members))
    shape, dtype = _parse_npy_header(text, shown, member)
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
    out = np.empty((len(rows), *shape[1:]), dtype=dtype)
    for i, row in enumerate(np.asarray(rows, dtype=np.int64).tolist()):
        if not 0 <= row < shape[0]:
            raise IndexError(f"row {row} outside 0..{shape[0] - 1}")
        handle.seek(data_start + row * row_bytes)
        out[i] = np.frombuffer(handle.read(row_bytes), dtype=dtype).reshape(shape[1:])
    return out
