"""Checkpoint submissions, without Django: check an uploaded model, run it safely, get scores.

    inputs = preprocessing_of(bundle)      # what the benchmark's bundle declares, or None
    info = detect_and_validate(path, inputs=inputs, original_name="model.onnx")
    images = load_images(ImageSource("idx", idx_path), inputs=inputs,
                         size=10000)                       # float32 [N, C, H, W], once
    scores = run_checkpoint(path, inputs=inputs, images=images,
                            checkpoint_format=info.format)  # float32 [N, num_classes]

Accepted: ONNX (any architecture) and safetensors state dicts for the networks this package
defines (`architectures`), when the benchmark's bundle names one (docs/bundles.md §2.1).
Every refusal or failed run is a CheckpointError with a `code`.
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
    from workers.inference.images import ImageSource, load_images
    from workers.inference.preprocessing import Preprocessing, preprocessing_of
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
    "ImageSource": "workers.inference.images",
    "load_images": "workers.inference.images",
    "Preprocessing": "workers.inference.preprocessing",
    "preprocessing_of": "workers.inference.preprocessing",
    "RunReport": "workers.inference.sandbox",
    "choose_batch_size": "workers.inference.sandbox",
    "run_checkpoint": "workers.inference.sandbox",
    "run_checkpoint_report": "workers.inference.sandbox",
}

__all__ = [
    "CheckpointError",
    "CheckpointInfo",
    "ImageSource",
    "Preprocessing",
    "RunReport",
    "architectures",
    "choose_batch_size",
    "detect_and_validate",
    "load_images",
    "preprocessing_of",
    "run_checkpoint",
    "run_checkpoint_report",
]


# submodules reachable as attributes (inference.images.read_cifar10_batch) before any import
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
