"""Deciding what an uploaded checkpoint is, and refusing everything but ONNX and safetensors.

Only two formats are accepted because only they can be checked by inspection alone: an ONNX
file is a protobuf graph of standard operators and a safetensors file is a JSON header plus
raw numbers. PyTorch's .pt/.pth/.ckpt files (and TorchScript, .pt2, .pkl, .npy with objects)
are pickles or zip archives of pickles, and unpickling runs whatever code the file names, so
the server never opens one: not with torch.load, not with weights_only, not "to look".

The decision uses both the name and the bytes: the bytes first (a pickle or a torch zip is
refused as such whatever it is called), then the name (only .onnx and .safetensors), then the
format's own full check.
"""

from __future__ import annotations

import hashlib
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workers.inference.errors import CheckpointError
from workers.inference.preprocessing import Preprocessing

DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # as EVALSERVER_MAX_UPLOAD_BYTES; protobuf caps ONNX at 2 GB

ACCEPTED_SUFFIXES = {".onnx": "onnx", ".safetensors": "safetensors"}
# Names that announce a pickle-based or otherwise uninspectable format: refused by name too, so
# that the message can say what to do instead even when the bytes are something else.
REFUSED_SUFFIXES = (
    ".pt", ".pth", ".pt2", ".pkl", ".pickle", ".ckpt", ".bin", ".zip", ".npy", ".npz", ".tar",
    ".h5", ".joblib",
)  # fmt: skip
HOW_TO_EXPORT = (
    "Upload an ONNX model (torch.onnx.export, one self-contained .onnx file) or, for the "
    "benchmarks whose network the server defines, a state dict saved with "
    "safetensors.torch.save_file (.safetensors)."
)


@dataclass(frozen=True)
class CheckpointInfo:
    """What detect_and_validate found: enough to store with the submission and to run it."""

    format: str  # "onnx" | "safetensors"
    sha256: str
    size_bytes: int
    original_name: str
    fixed_batch: int | None = None  # ONNX models exported with a fixed batch size
    details: dict[str, Any] = field(default_factory=dict)  # JSON-ready facts for the page


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sniff(path: Path) -> str:
    """What the bytes look like: "safetensors", "pickle", "torch_zip", "zip", "npy", "other".

    Only the first bytes and, for a zip, its central directory are read; nothing is decoded.
    """
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(16)
    # safetensors first: its u64 length can begin with 0x80, the pickle protocol opcode
    if len(head) >= 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] <= size - 8:
        return "safetensors"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError, ValueError):
            return "zip"
        # torch.save writes <name>/data.pkl; TorchScript and .pt2 archives hold .pkl files too
        return "torch_zip" if any(n.endswith(".pkl") for n in names) else "zip"
    # pickle protocols 2-5 start with PROTO (0x80) and the version; 0-1 have no magic, but
    # they cannot parse as either accepted format and are never unpickled anyway
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    return "other"


def claimed_format(original_name: str) -> str:
    """The format the file name claims; refused names raise with a useful message."""
    lower = original_name.lower()
    for suffix, fmt in ACCEPTED_SUFFIXES.items():
        if lower.endswith(suffix):
            return fmt
    refused = next((s for s in REFUSED_SUFFIXES if lower.endswith(s)), None)
    if refused in (".pt", ".pth", ".pt2", ".pkl", ".pickle", ".ckpt", ".bin", ".joblib"):
        raise CheckpointError(
            "unsupported_format",
            f"{refused} files are pickle-based (PyTorch checkpoints, TorchScript, joblib) and "
            f"loading a pickle can run arbitrary code, so the server does not accept them. "
            + HOW_TO_EXPORT,
        )
    what = f"{refused} files are not accepted" if refused else "unrecognised file name"
    raise CheckpointError("unsupported_format", f"{what} ({original_name!r}). " + HOW_TO_EXPORT)


def detect_and_validate(
    path: Path | str,
    *,
    inputs: Preprocessing,
    original_name: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    parse_onnx: bool = True,
) -> CheckpointInfo:
    """Identify and fully check an uploaded checkpoint for a benchmark that declares these
    `inputs` (docs/bundles.md §2.1), loading nothing.

    `parse_onnx=False` leaves an ONNX file's graph unparsed: parsing one takes about 27 times
    the file's size in memory and seconds of CPU, too much for a web request, so the web
    process checks only what costs nothing (size, name, magic bytes: no pickle, no zip) and
    the worker's sandboxed child, which parses the graph again from the very bytes it loads
    anyway, refuses a bad one with the same named reasons. A safetensors header (at most 1 MB)
    is always parsed.

    Raises CheckpointError naming the problem; returns a CheckpointInfo otherwise.
    """
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        raise CheckpointError("empty_file", "the file is empty")
    if size > max_bytes:
        raise CheckpointError(
            "checkpoint_too_large",
            f"the file has {size:,} bytes; the limit is {max_bytes:,} bytes",
        )
    kind = sniff(path)
    if kind in ("pickle", "torch_zip"):
        raise CheckpointError(
            "pickle_refused",
            "the file is a Python pickle"
            + (" inside a zip archive (a torch.save checkpoint)" if kind == "torch_zip" else "")
            + ". Loading a pickle can run arbitrary code, so the server never opens one. "
            + HOW_TO_EXPORT,
        )
    fmt = claimed_format(original_name)
    if kind in ("zip", "npy"):
        raise CheckpointError(
            "unsupported_format",
            f"the file is named .{fmt} but its bytes are a "
            f"{'zip archive' if kind == 'zip' else 'NumPy array file'}. " + HOW_TO_EXPORT,
        )
    sha256 = sha256_of(path)
    if fmt == "safetensors":
        from workers.inference.safetensors_format import inspect_safetensors

        header = inspect_safetensors(path, inputs.architecture)
        dtypes = sorted({e.dtype for e in header.tensors.values()})
        return CheckpointInfo(
            "safetensors",
            sha256,
            size,
            original_name,
            details={
                "tensors": len(header.tensors),
                "dtypes": dtypes,
                # shown on the page: bounded, since the header may hold up to 1 MB of it
                "metadata": {k[:100]: v[:200] for k, v in list(header.metadata.items())[:20]},
            },
        )
    if not parse_onnx:
        return CheckpointInfo("onnx", sha256, size, original_name,
                              details={"graph": "checked by the worker before it runs"})
    from workers.inference.onnx_format import inspect_onnx

    _, summary = inspect_onnx(
        path.read_bytes(), input_shape=inputs.input_shape, num_classes=inputs.num_classes
    )
    return CheckpointInfo(
        "onnx",
        sha256,
        size,
        original_name,
        fixed_batch=summary.fixed_batch,
        details={
            "opset": summary.opset,
            "input": summary.input_name,
            "output": summary.output_name,
            "output_dtype": summary.output_dtype,
            "nodes": summary.num_nodes,
            "producer": summary.producer,
        },
    )
