"""The preprocessing the server applies to each benchmark's images before a checkpoint sees them.

It is declared as data (`PREPROCESSING`) so that the web page can show submitters exactly what
their model will receive (`describe()`, `as_dict()`), and the same objects do the arithmetic
(`normalize`, `resize_and_crop`), so the page and the computation cannot drift apart.
The recipes are the conventional ones (torchvision's `ToTensor` then `Normalize`; for ImageNet
`Resize(256)` then `CenterCrop(224)`), so a model trained with them needs no adaptation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from PIL import Image

from workers.scoring.bundles import builtin_bundle


@dataclass(frozen=True)
class Preprocessing:
    """What a model receives for one benchmark: a float32 NCHW array built this way."""

    benchmark: str
    image_set: str  # the image set whose canonical order the scores must follow
    input_shape: tuple[int, int, int]  # (C, H, W) of one image
    color: str  # "grayscale" | "RGB"
    mean: tuple[float, ...]  # per channel, applied after dividing by pixel_divisor
    std: tuple[float, ...]
    resize_shorter: int | None = None  # resize so that the shorter side has this many pixels
    center_crop: int | None = None  # then cut the central square of this size
    interpolation: str | None = None
    layout: str = "NCHW"
    dtype: str = "float32"
    pixel_divisor: float = 255.0

    @property
    def num_classes(self) -> int:
        return builtin_bundle(self.benchmark).classes.count

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
        """JSON-ready form for the API and the web page (includes the sentence)."""
        data = asdict(self)
        data["input_shape"] = list(self.input_shape)
        data["mean"], data["std"] = list(self.mean), list(self.std)
        data["num_classes"] = self.num_classes
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
        """A decoded PIL image -> uint8 [C, H, W] (the geometric steps; ImageNet only).

        Matches torchvision: Resize(256) keeps the aspect ratio with the long side truncated
        to int(256 * long / short), and CenterCrop rounds the offsets with round().
        """
        if self.resize_shorter is None or self.center_crop is None:
            raise ValueError(f"{self.benchmark} images are not resized")
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


PREPROCESSING: dict[str, Preprocessing] = {
    "mnist": Preprocessing(
        benchmark="mnist",
        image_set="mnist-test",
        input_shape=(1, 28, 28),
        color="grayscale",
        mean=(0.1307,),
        std=(0.3081,),
    ),
    "cifar10": Preprocessing(
        benchmark="cifar10",
        image_set="cifar10-test",
        input_shape=(3, 32, 32),
        color="RGB",
        mean=(0.4914, 0.4822, 0.4465),
        std=(0.2470, 0.2435, 0.2616),
    ),
    "imagenet": Preprocessing(
        benchmark="imagenet",
        image_set="imagenet-val",
        input_shape=(3, 224, 224),
        color="RGB",
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
        resize_shorter=256,
        center_crop=224,
        interpolation="bilinear",
    ),
}


def preprocessing_for(benchmark: str) -> Preprocessing:
    """The declared preprocessing of a benchmark; a KeyError names the known ones."""
    try:
        return PREPROCESSING[benchmark]
    except KeyError:
        raise KeyError(
            f"no checkpoint preprocessing for benchmark {benchmark!r}; "
            f"known: {', '.join(sorted(PREPROCESSING))}"
        ) from None
