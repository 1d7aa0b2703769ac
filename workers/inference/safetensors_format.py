"""Checking a safetensors file against the architecture it claims to fit, before loading it.

The safetensors layout is: an 8-byte little-endian u64 N, then N bytes of a JSON object
mapping tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (plus an optional
"__metadata__" object of strings), then the raw tensor bytes, offsets relative to their
start. We parse that header ourselves with tight limits so that a hostile file (a header
length of 2**63, offsets past the end, tensors overlapping each other or of the wrong size)
is refused with a precise reason before any library maps or allocates anything from it, and
so that a file that is valid safetensors but the wrong network is refused by key and shape.
"""

from __future__ import annotations

import io
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from workers.inference.errors import CheckpointError

MAX_HEADER_BYTES = 1024 * 1024  # a ResNet-20 header is ~10 KB; 1 MB is generous
FLOAT_DTYPES: dict[str, int] = {"F32": 4, "F16": 2, "BF16": 2}  # dtype -> bytes per element
IGNORED_DTYPE = ("I64", 8)  # BatchNorm's num_batches_tracked counter (see architectures)


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    header_length: int
    tensors: dict[str, TensorEntry]
    metadata: dict[str, str]


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Python's json keeps the last of two equal keys, while other parsers may keep the first:
    # a file that means two different things to two readers is refused outright.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise CheckpointError(
                "safetensors_header_invalid", f"the header names {key!r} twice"
            )
        result[key] = value
    return result


def _refuse_constant(name: str) -> Any:
    raise CheckpointError("safetensors_header_invalid", f"the header contains {name}")


def _is_count(value: Any) -> bool:
    """A non-negative int that is not a bool (JSON true would otherwise pass as 1)."""
    return type(value) is int and value >= 0


def read_header(source: Path | bytes) -> SafetensorsHeader:
    """Parse and check the header layout (not yet against an architecture), from a file or
    from the file's bytes already in memory."""
    handle: BinaryIO
    if isinstance(source, bytes):
        size, handle = len(source), io.BytesIO(source)
    else:
        size, handle = source.stat().st_size, open(source, "rb")
    with handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise CheckpointError(
                "safetensors_header_invalid", "the file is shorter than the 8-byte header length"
            )
        (length,) = struct.unpack("<Q", prefix)
        if length > MAX_HEADER_BYTES:
            raise CheckpointError(
                "safetensors_header_too_large",
                f"the header claims to be {length:,} bytes long; the limit is "
                f"{MAX_HEADER_BYTES:,} bytes",
            )
        if 8 + length > size:
            raise CheckpointError(
                "safetensors_header_too_large",
                f"the header claims to be {length:,} bytes long, but the file has only "
                f"{size - 8:,} bytes after the length field",
            )
        raw = handle.read(length)
    try:
        header = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_refuse_duplicates,
            parse_constant=_refuse_constant,
        )
    except CheckpointError:  # a key twice or a constant, refused by name (a ValueError too)
        raise
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CheckpointError(
            "safetensors_header_invalid", f"the header is not valid UTF-8 JSON ({exc})"
        ) from None
    except ValueError:  # an integer past Python's 4,300-digit conversion limit
        raise CheckpointError(
            "safetensors_header_invalid", "the header holds a number with thousands of digits"
        ) from None
    if not isinstance(header, dict):
        raise CheckpointError("safetensors_header_invalid", "the header is not a JSON object")

    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise CheckpointError(
            "safetensors_header_invalid", "__metadata__ must map strings to strings"
        )

    data_length = size - 8 - length
    tensors: dict[str, TensorEntry] = {}
    for name, entry in header.items():
        tensors[name] = _entry(name, entry, data_length)
    _check_layout(tensors, data_length)
    return SafetensorsHeader(length, tensors, metadata)


def _entry(name: str, entry: Any, data_length: int) -> TensorEntry:
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise CheckpointError(
            "safetensors_header_invalid",
            f"tensor {name!r} must have exactly the fields dtype, shape and data_offsets",
        )
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str):
        raise CheckpointError("safetensors_header_invalid", f"tensor {name!r}: dtype is not text")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise CheckpointError(
            "safetensors_header_invalid", f"tensor {name!r}: shape is not a list of sizes"
        )
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_is_count(o) for o in offsets)
        or offsets[0] > offsets[1]
    ):
        raise CheckpointError(
            "safetensors_header_invalid", f"tensor {name!r}: data_offsets is not [begin, end]"
        )
    if offsets[1] > data_length:
        raise CheckpointError(
            "safetensors_offsets_out_of_range",
            f"tensor {name!r} ends at byte {offsets[1]:,} of the data, but the file holds only "
            f"{data_length:,} bytes of data",
        )
    return TensorEntry(name, dtype, tuple(shape), offsets[0], offsets[1])


def _check_layout(tensors: dict[str, TensorEntry], data_length: int) -> None:
    """Tensors must tile the data area exactly: no gap, no overlap, nothing trailing."""
    position = 0
    for entry in sorted(tensors.values(), key=lambda e: (e.begin, e.end)):
        if entry.begin != position:
            what = "overlaps the previous tensor" if entry.begin < position else "leaves a gap"
            raise CheckpointError(
                "safetensors_offsets_invalid",
                f"tensor {entry.name!r} starts at byte {entry.begin:,} and {what} "
                f"(expected byte {position:,})",
            )
        position = entry.end
    if position != data_length:
        raise CheckpointError(
            "safetensors_offsets_invalid",
            f"the tensors cover {position:,} bytes but the file holds {data_length:,} bytes "
            "of data",
        )


def validate_against(
    header: SafetensorsHeader,
    expected: dict[str, tuple[int, ...]],
    ignorable: frozenset[str],
) -> None:
    """Keys, dtypes, shapes and byte sizes must match the architecture exactly."""
    missing = [k for k in expected if k not in header.tensors]
    if missing:
        raise CheckpointError(
            "safetensors_missing_key",
            f"the state dict lacks {len(missing)} tensor(s) the architecture needs: "
            f"{_names(missing)}",
        )
    unexpected = [k for k in header.tensors if k not in expected and k not in ignorable]
    if unexpected:
        raise CheckpointError(
            "safetensors_unexpected_key",
            f"the state dict holds {len(unexpected)} tensor(s) the architecture does not have: "
            f"{_names(unexpected)}",
        )
    for name, entry in header.tensors.items():
        if name in expected:
            itemsize = FLOAT_DTYPES.get(entry.dtype)
            want_shape = expected[name]
            allowed = "F32, F16 or BF16"
        else:  # an ignorable BatchNorm counter
            itemsize = IGNORED_DTYPE[1] if entry.dtype == IGNORED_DTYPE[0] else None
            want_shape = ()
            allowed = IGNORED_DTYPE[0]
        if itemsize is None:
            raise CheckpointError(
                "safetensors_dtype",
                f"tensor {name!r} has dtype {entry.dtype}; only {allowed} is accepted",
            )
        if entry.shape != want_shape:
            raise CheckpointError(
                "safetensors_shape_mismatch",
                f"tensor {name!r} has shape {list(entry.shape)}; the architecture needs "
                f"{list(want_shape)}",
            )
        if entry.end - entry.begin != math.prod(entry.shape) * itemsize:
            raise CheckpointError(
                "safetensors_offsets_invalid",
                f"tensor {name!r} occupies {entry.end - entry.begin:,} bytes, but a "
                f"{entry.dtype} tensor of shape {list(entry.shape)} needs "
                f"{math.prod(entry.shape) * itemsize:,}",
            )


def _names(keys: list[str], limit: int = 5) -> str:
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def inspect_safetensors(source: Path | bytes, architecture: str | None) -> SafetensorsHeader:
    """The full pre-load check of a safetensors file (or its bytes) as a state dict of the
    architecture the benchmark names (None: it names none)."""
    # The torch-free tables (the web process checks uploads and never imports torch).
    from workers.inference import state_dicts

    if architecture not in state_dicts.ARCHITECTURES:
        raise CheckpointError(
            "unsupported_format",
            "safetensors state dicts are accepted only for the benchmarks whose bundle names a "
            f"network the server defines ({', '.join(sorted(state_dicts.ARCHITECTURES))}); "
            "this one names none: upload an ONNX model",
        )
    header = read_header(source)
    validate_against(header, state_dicts.STATE_DICTS[architecture],
                     state_dicts.IGNORED[architecture])
    return header
