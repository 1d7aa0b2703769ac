"""What a checkpoint receives: a benchmark's declared inputs (its bundle's `[inputs]` table,
docs/bundles.md §2.1) as the one object that both describes and computes them.

The web page shows submitters exactly what their model will receive (`describe()`,
`as_dict()`), and the same object does the arithmetic (`normalize`, `resize_and_crop`), so the
page and the computation cannot drift apart. The steps are the conventional ones
(torchvision's `ToTensor` then `Normalize`; with `resize_shorter` and `center_crop`,
`Resize` then `CenterCrop` first), so a model trained with them needs no adaptation. It
travels as JSON (`as_dict`, `from_dict`): in the benchmark's row and to the sandboxed child.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from PIL import Image

from workers.scoring.bundles.model import Bundle


@dataclass(frozen=True)
class Preprocessing:
    """What a model receives for one benchmark: a float32 NCHW array built this way, and the
    number of scores it must return per image."""

    input_shape: tuple[int, int, int]  # (C, H, W) of one image
    color: str  # "grayscale" | "RGB"
    mean: tuple[float, ...]  # per channel, applied after dividing by pixel_divisor
    std: tuple[float, ...]
    num_classes: int
    resize_shorter: int | None = None  # resize so that the shorter side has this many pixels
    center_crop: int | None = None  # then cut the central square of this size
    interpolation: str | None = None
    architecture: str | None = None  # the server's network for a safetensors state dict
    layout: str = "NCHW"
    dtype: str = "float32"
    pixel_divisor: float = 255.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preprocessing:
        """The object `as_dict` wrote (extra keys such as the description are ignored)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["input_shape"] = tuple(values["input_shape"])
        values["mean"], values["std"] = tuple(values["mean"]), tuple(values["std"])
        return cls(**values)

    def describe(self) -> str:
        """One plain-English paragraph for submitters."""
        c, h, w = self.input_shape
        if self.resize_shorter is not None and self.center_crop is not None:
            geometry = (
                f"Each image is converted to {self.color}, resized so that its shorter side is "
                f"{self.resize_shorter} pixels ({self.interpolation} interpolation, keeping the "
                f"aspect ratio) and center-cropped to {self.center_crop}x{self.center_crop}."
            )
        else:
            geometry = f"Each image is a {h}x{w} {self.color} image, used at that size."
        return (
            f"{geometry} Its pixel values (0-255) are divided by {self.pixel_divisor:g}, then "
            f"normalized per channel as (x - mean) / std with mean {_fmt(self.mean)} and std "
            f"{_fmt(self.std)}. The model receives a {self.dtype} array of shape "
            f"[N, {c}, {h}, {w}] ({self.layout}: batch, channel, height, width) and must return "
            f"{self.num_classes} scores per image (logits or probabilities; the highest score "
            f"is the prediction), shape [N, {self.num_classes}]."
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form for the benchmark's row, the API and the web page (includes the
        sentence)."""
        data = asdict(self)
        data["input_shape"] = list(self.input_shape)
        data["mean"], data["std"] = list(self.mean), list(self.std)
        data["description"] = self.describe()
        return data

    def normalize(self, pixels: np.ndarray) -> np.ndarray:
        """uint8 [N, C, H, W] -> float32 ((pixels / 255) - mean) / std, as the model receives it.

        Computed in float32, in the same order as torchvision's ToTensor + Normalize, so that a
        submitter reproducing it gets bit-identical inputs.
        """
        if pixels.dtype != np.uint8 or pixels.ndim != 4 or pixels.shape[1:] != self.input_shape:
            raise ValueError(
                f"expected uint8 [N, {', '.join(map(str, self.input_shape))}], "
                f"got {pixels.dtype} {list(pixels.shape)}"
            )
        mean = np.asarray(self.mean, dtype=np.float32).reshape(1, -1, 1, 1)
        std = np.asarray(self.std, dtype=np.float32).reshape(1, -1, 1, 1)
        out = pixels.astype(np.float32)
        out /= np.float32(self.pixel_divisor)
        out -= mean
        out /= std
        return out

    def resize_and_crop(self, image: Image.Image) -> np.ndarray:
        """A decoded PIL image -> uint8 [C, H, W] (the geometric steps, for inputs that
        declare them).

        Matches torchvision: Resize(256) keeps the aspect ratio with the long side truncated
        to int(256 * long / short), and CenterCrop rounds the offsets with round().
        """
        if self.resize_shorter is None or self.center_crop is None:
            raise ValueError("these inputs declare no resize_shorter and center_crop")
        image = image.convert("L" if self.color == "grayscale" else "RGB")
        width, height = image.size
        short, long = sorted((width, height))
        new_short, new_long = self.resize_shorter, int(self.resize_shorter * long / short)
        size = (new_short, new_long) if width <= height else (new_long, new_short)
        image = image.resize(size, Image.Resampling.BILINEAR)
        crop = self.center_crop
        left = int(round((size[0] - crop) / 2.0))
        top = int(round((size[1] - crop) / 2.0))
        image = image.crop((left, top, left + crop, top + crop))
        array = np.asarray(image, dtype=np.uint8)
        return array.transpose(2, 0, 1) if array.ndim == 3 else array[None]


def _fmt(values: tuple[float, ...]) -> str:
    return "(" + ", ".join(f"{v:g}" for v in values) + ")"


def preprocessing_of(bundle: Bundle) -> Preprocessing | None:
    """What a checkpoint submitted to the bundle's benchmark receives; None when the bundle
    declares no `[inputs]` (the benchmark takes predictions only)."""
    inputs = bundle.inputs
    if inputs is None:
        return None
    return Preprocessing(
        input_shape=inputs.shape, color=inputs.color, mean=inputs.mean, std=inputs.std,
        num_classes=bundle.classes.count, resize_shorter=inputs.resize_shorter,
        center_crop=inputs.center_crop, interpolation=inputs.interpolation,
        architecture=inputs.architecture)
