"""A manifest's `[inputs]` table: what a checkpoint submitted to the benchmark receives
(docs/bundles.md §2.1). Which networks exist for `architecture` is the inference library's
to say (workers/inference/state_dicts.py): the catalog checks the name when it loads the
bundle, since the scoring core does not import the inference library."""

from __future__ import annotations

from .fields import Table
from .model import COLORS, InputsDef

INTERPOLATIONS = ("bilinear",)
MAX_SIDE = 4096  # pixels: a model input larger than this is a mistake in the manifest


def _floats(table: Table, key: str, channels: int) -> tuple[float, ...]:
    values: tuple[float, ...] = table.number_list(key)
    if len(values) != channels:
        raise table.error("bad_value", key, f"give {channels} numbers, one per channel, got "
                          f"{len(values)}")
    return values


def inputs_def(table: Table | None) -> InputsDef | None:
    """The declared inputs, checked; None when the manifest has no `[inputs]` table."""
    if table is None:
        return None
    shape = table.int_list("shape")
    if len(shape) != 3 or not all(1 <= side <= MAX_SIDE for side in shape):
        raise table.error("bad_value", "shape", f"give [channels, height, width], each 1 to "
                          f"{MAX_SIDE}, got {list(shape)}")
    color = table.choice("color", COLORS)
    channels = 1 if color == "grayscale" else 3
    if shape[0] != channels:
        raise table.error("bad_value", "shape", f"a {color} image has {channels} channel(s), "
                          f"not {shape[0]}")
    mean = _floats(table, "mean", channels)
    std = _floats(table, "std", channels)
    if not all(s > 0 for s in std):
        raise table.error("bad_value", "std", "every std must be positive")
    resize = table.integer("resize_shorter", None, minimum=1, maximum=MAX_SIDE)
    crop = table.integer("center_crop", None, minimum=1, maximum=MAX_SIDE)
    if (resize is None) != (crop is None):
        raise table.error("bad_value", "center_crop", "give both resize_shorter and "
                          "center_crop, or neither")
    if crop is not None and shape[1:] != (crop, crop):
        raise table.error("bad_value", "center_crop", f"a {crop}x{crop} crop does not give "
                          f"the declared {shape[1]}x{shape[2]} input")
    interpolation = table.choice("interpolation", INTERPOLATIONS,
                                 None if resize is None else "bilinear")
    architecture = table.slug("architecture", None)
    table.done()
    return InputsDef(shape=(shape[0], shape[1], shape[2]), color=color, mean=mean, std=std,
                     resize_shorter=resize, center_crop=crop, interpolation=interpolation,
                     architecture=architecture)
