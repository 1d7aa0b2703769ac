"""Reading a few rows of an array stored in an uncompressed .npz without loading it all.

A worker re-scoring after one review decision needs each stored submission's top-k at one
example only; loading every 500 kB compact file for that would dominate the time. `np.savez`
stores members uncompressed, so a member's rows sit at a fixed offset inside the zip file.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # the zip local file header, 30 bytes


def _member_offset(path: Path, member: str) -> int:
    """Where the stored bytes of `member`.npy start inside the zip file."""
    name = f"{member}.npy".encode()
    with open(path, "rb") as handle:
        # Fast path: the member is the archive's first entry (the worker writes `topk` first),
        # so its local header is at offset 0 and the central directory need not be read.
        fields = _LOCAL_HEADER.unpack(handle.read(_LOCAL_HEADER.size))
        name_length, extra_length = fields[-2], fields[-1]
        compression = fields[4]
        if fields[0] == b"PK\x03\x04" and compression == zipfile.ZIP_STORED \
                and handle.read(name_length) == name:
            return _LOCAL_HEADER.size + name_length + extra_length
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name.decode())
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{path}: {member} is compressed; rows cannot be read in place")
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        fields = _LOCAL_HEADER.unpack(handle.read(_LOCAL_HEADER.size))
        if fields[0] != b"PK\x03\x04":
            raise ValueError(f"{path}: not a zip local header at {info.header_offset}")
        return info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]


def npz_member_rows(path: Path, member: str, rows: np.ndarray) -> np.ndarray:
    """`np.load(path)[member][rows]` for an uncompressed .npz, reading only those rows."""
    offset = _member_offset(path, member)
    with open(path, "rb") as handle:
        handle.seek(offset)
        version = np.lib.format.read_magic(handle)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(handle)
        if fortran or dtype.hasobject:
            raise ValueError(f"{path}: {member} is not a C-ordered plain array")
        data_start = handle.tell()
        row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        out = np.empty((len(rows), *shape[1:]), dtype=dtype)
        for i, row in enumerate(np.asarray(rows, dtype=np.int64).tolist()):
            if not 0 <= row < shape[0]:
                raise IndexError(f"row {row} outside 0..{shape[0] - 1}")
            handle.seek(data_start + row * row_bytes)
            out[i] = np.frombuffer(handle.read(row_bytes), dtype=dtype).reshape(shape[1:])
    return out
