"""The example both review pages show above the question (docs/hosts/review-queue.md, "The
example"): its image, its text, or why this server cannot show it and what an operator does
(leaderboard/catalog/example_files.py decides which)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from leaderboard.catalog.example_files import (
    ExampleText,
    ImageFile,
    ImageUri,
    Unavailable,
    example_shown,
)
from leaderboard.catalog.models import ExampleSet
from leaderboard.catalog.selectors import example_namer


@dataclass(frozen=True)
class ReviewExample:
    name: str  # the example's name (ILSVRC2012_val_00000063.JPEG)
    image_src: str | None = None  # a data URI, or the URL of review_example_image
    drawn: bool = False  # a small array image (MNIST, CIFAR), scaled up without smoothing
    text: ExampleText | None = None
    unavailable: Unavailable | None = None


def review_example(*, example_set: ExampleSet, index: int) -> ReviewExample:
    name = example_namer(example_set=example_set)(index)
    shown = example_shown(example_set=example_set, index=index)
    if isinstance(shown, ImageUri):
        return ReviewExample(name, image_src=shown.uri, drawn=True)
    if isinstance(shown, ImageFile):
        return ReviewExample(name, image_src=reverse(
            "review_example_image",
            args=[example_set.benchmark.slug, example_set.slug, index]))
    if isinstance(shown, ExampleText):
        return ReviewExample(name, text=shown)
    return ReviewExample(name, unavailable=shown)
