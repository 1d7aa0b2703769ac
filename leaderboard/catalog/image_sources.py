"""Where this server has a benchmark's images, and what a checkpoint receives: read from what
its bundle declared (docs/bundles.md §4.1 and §2.1, kept in the Benchmark and ExampleSet rows),
never from its slug. Used by checkpoint submissions, the image audits and the review pages.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.selectors import example_namer
from workers.inference.images import ImageSource
from workers.inference.preprocessing import Preprocessing
from workers.scoring.bundles.manifest import SETTING_PREFIX

# What a setting must point at, by declared format (workers/inference/images.py).
FORMAT_WORDS = {
    "idx": "IDX image file",
    "cifar-batch": "CIFAR python batch file (such as cifar-10-batches-py/test_batch)",
    "npy": "uint8 [N, H, W, C] .npy file",
    "folder": "folder of image files named by the examples",
}


def benchmark_preprocessing(*, benchmark: Benchmark) -> Preprocessing | None:
    """What a checkpoint submitted to the benchmark receives; None: it takes none."""
    return Preprocessing.from_dict(benchmark.inputs) if benchmark.inputs else None


def declared_path(declaration: dict[str, str]) -> tuple[Path | None, str]:
    """The path an example set's `images` (or `texts`) declaration resolves to on this host
    (None when unset), and how it is named, for messages."""
    if declaration.get("setting"):
        name = declaration["setting"]
        # only the server's own (EVALSERVER_*) settings, so that a manifest cannot read any
        # other; the bundle's parse refuses other names, this covers rows loaded before that
        value = getattr(settings, name, None) if name.startswith(SETTING_PREFIX) else None
        return (Path(value) if value else None), name
    path = Path(settings.EVALSERVER_DATA_DIR) / declaration["path"]
    return path, str(path)


def _source_or_problem(example_set: ExampleSet) -> ImageSource | str:
    """The example set's images on this host, or why the server cannot read them."""
    if not example_set.images:
        return f"{example_set.slug}'s bundle declares no images"
    path, named = declared_path(example_set.images)
    if path is None:
        return f"set {named} to the {FORMAT_WORDS[example_set.images['format']]} of its images"
    if not path.exists():
        return f"{path} is missing"
    return ImageSource(example_set.images["format"], path, name=example_set.slug)


def example_set_source_problem(*, example_set: ExampleSet) -> str | None:
    """Why the server cannot read the example set's images (None when it can)."""
    found = _source_or_problem(example_set)
    return found if isinstance(found, str) else None


def example_set_source(*, example_set: ExampleSet) -> ImageSource | None:
    """The example set's images on this host; None when not declared or not there."""
    found = _source_or_problem(example_set)
    return None if isinstance(found, str) else found


def example_set_names(*, example_set: ExampleSet) -> list[str]:
    """The example names in canonical order (a folder of images is named by them)."""
    namer = example_namer(example_set=example_set)
    return [namer(index) for index in range(example_set.size)]
