"""ImageNet loaded with a small multi-label file of three classes, the world of the class-mean
tests (docs/metrics.md §5.1): the board's column, the submission page and the re-scores."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_django.fixtures import Settings

from tests.helpers import imagenet_original_labels_by_file_number
from workers.scoring import datasets

# the class-collapse map joins the two (workers/scoring/multilabel.py): B and C are neither
SUNGLASS, SUNGLASSES = 836, 837


@dataclass(frozen=True)
class ThreeClasses:
    labels: list[int]  # ImageNet's original validation labels, by file number
    images_a: list[int]  # every image of class A, the first image's class (50)
    b: int  # one image of another class B
    c: int  # one image of a third class C

    @property
    def annotated(self) -> list[int]:
        return [*self.images_a, self.b, self.c]


def three_classes_load(*, data_dir: Path, tmp_path: Path, settings: Settings,
                       run_load_benchmarks: Callable[..., Any]) -> ThreeClasses:
    """Every image of class A, one of class B and one of class C in the multi-label file, each
    correct as its own class only; loaded with imagenet, and no daily quota."""
    labels = imagenet_original_labels_by_file_number(data_dir)
    wnid = [c["wnid"] for c in json.loads((data_dir / "imagenet/class_info.json").read_text())]
    a = labels[0]
    b = next(i for i in range(50_000) if labels[i] not in (a, SUNGLASS, SUNGLASSES))
    c = next(i for i in range(50_000) if labels[i] not in (a, labels[b], SUNGLASS, SUNGLASSES))
    world = ThreeClasses(labels, [i for i in range(50_000) if labels[i] == a], b, c)
    path = tmp_path / "human_accuracy_v3.0.0.json"
    path.write_text(json.dumps({"initial_annots": {
        datasets.imagenet_file_name(i): {"correct": [wnid[labels[i]]]} for i in world.annotated},
        "problematic_images": {}, "imagenet_m": []}))
    settings.EVALSERVER_MULTILABEL_FILE = path
    settings.EVALSERVER_DAILY_QUOTA = 0
    run_load_benchmarks("--benchmark", "imagenet")
    return world
