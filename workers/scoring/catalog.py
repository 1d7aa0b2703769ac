"""What a benchmark, its image sets and its label sets are, as the scoring core sees them.

No benchmark is declared here: every benchmark is a bundle (docs/bundles.md), and
`workers.scoring.bundles.benchmark_spec_from_bundle` turns one into these specs (the built-in
ones: `workers.scoring.bundles.builtin_benchmark_spec`). This module only describes;
`datasets.py` reads files and `label_set_builders.py` builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ImageSetSpec:
    slug: str
    benchmark: str
    name: str
    size: int
    description: str = ""


@dataclass(frozen=True)
class LabelSetSpec:
    slug: str
    benchmark: str
    image_set: str
    kind: str  # "single" | "multi" | "soft"
    family: str  # which metric section applies: see metrics.score_label_set
    name: str
    description: str
    citation: str
    # files under the data directory that the builder reads
    files: tuple[str, ...]
    # the benchmark's class count and the image set's size, which the labels are checked against
    num_classes: int
    size: int
    params: tuple[tuple[str, object], ...] = ()
    # optional label sets are built only when their source is configured (multi-label file)
    optional_source: str | None = None

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class BenchmarkSpec:
    slug: str
    name: str
    num_classes: int
    main_image_set: str
    image_sets: tuple[ImageSetSpec, ...]
    label_sets: tuple[LabelSetSpec, ...] = field(default=())

    def image_set(self, slug: str) -> ImageSetSpec:
        for image_set in self.image_sets:
            if image_set.slug == slug:
                return image_set
        raise KeyError(slug)


# The multi-label file is not in the public data directory; a maintainer configures it.
MULTILABEL_SOURCE = "multilabel_file"
