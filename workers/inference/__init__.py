"""Checkpoint submissions, without Django: check an uploaded model, run it safely, get scores.

    info = detect_and_validate(path, benchmark="mnist", original_name="model.onnx")
    images = load_images("mnist", data_dir=data_dir)           # float32 [N, C, H, W], once
    scores = run_checkpoint(path, benchmark="mnist", images=images,
                            checkpoint_format=info.format)     # float32 [N, 10]

Accepted: ONNX (any architecture) and safetensors state dicts for the networks this package
defines (`architectures`). Every refusal or failed run is a CheckpointError with a `code`.
Names are imported lazily: the child process imports this package too, and must not pay for
torch or Pillow before it has limited itself, and `architectures` imports torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workers.inference import architectures
    from workers.inference.errors import CheckpointError
    from workers.inference.formats import CheckpointInfo, detect_and_validate
    from workers.inference.images import load_images
    from workers.inference.preprocessing import PREPROCESSING, Preprocessing
    from workers.inference.sandbox import (
        RunReport,
        choose_batch_size,
        run_checkpoint,
        run_checkpoint_report,
    )

_LAZY = {
    "CheckpointError": "workers.inference.errors",
    "CheckpointInfo": "workers.inference.formats",
    "detect_and_validate": "workers.inference.formats",
    "load_images": "workers.inference.images",
    "PREPROCESSING": "workers.inference.preprocessing",
    "Preprocessing": "workers.inference.preprocessing",
    "RunReport": "workers.inference.sandbox",
    "choose_batch_size": "workers.inference.sandbox",
    "run_checkpoint": "workers.inference.sandbox",
    "run_checkpoint_report": "workers.inference.sandbox",
}

__all__ = [
    "PREPROCESSING",
    "CheckpointError",
    "CheckpointInfo",
    "Preprocessing",
    "RunReport",
    "architectures",
    "choose_batch_size",
    "detect_and_validate",
    "load_images",
    "run_checkpoint",
    "run_checkpoint_report",
]


# submodules reachable as attributes (inference.images.resolve_image_set) before any import
_SUBMODULES = frozenset({
    "architectures", "child", "errors", "formats", "images", "onnx_format", "preprocessing",
    "safetensors_format", "sandbox",
})  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"workers.inference.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'workers.inference' has no attribute {name!r}")
