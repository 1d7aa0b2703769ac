"""Where this server has a benchmark's images, and what a checkpoint receives: read from what
its bundle declared (docs/bundles.md §4.1 and §2.1, kept in the Benchmark and ImageSet rows),
never from its slug. Used by checkpoint submissions and by the image audits.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from leaderboard.catalog.models import Benchmark, ImageSet
from leaderboard.catalog.selectors import image_set_example_namer
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


def _declared_path(images: dict[str, str]) -> tuple[Path | None, str]:
    """The path the declaration resolves to on this host (None when unset), and how it is
    named, for messages."""
    if images.get("setting"):
        name = images["setting"]
        # only the server's own (EVALSERVER_*) settings, so that a manifest cannot read any
        # other; the bundle's parse refuses other names, this covers rows loaded before that
        value = getattr(settings, name, None) if name.startswith(SETTING_PREFIX) else None
        return (Path(value) if value else None), name
    path = Path(settings.EVALSERVER_DATA_DIR) / images["path"]
    return path, str(path)


def _source_or_problem(image_set: ImageSet) -> ImageSource | str:
    """The image set's images on this host, or why the server cannot read them."""
    if not image_set.images:
        return f"{image_set.slug}'s bundle declares no images"
    path, named = _declared_path(image_set.images)
    if path is None:
        return f"set {named} to the {FORMAT_WORDS[image_set.images['format']]} of its images"
    if not path.exists():
        return f"{path} is missing"
    return ImageSource(image_set.images["format"], path, name=image_set.slug)


def image_set_source_problem(*, image_set: ImageSet) -> str | None:
    """Why the server cannot read the image set's images (None when it can)."""
    found = _source_or_problem(image_set)
    return found if isinstance(found, str) else None


def image_set_source(*, image_set: ImageSet) -> ImageSource | None:
    """The image set's images on this host; None when not declared or not there."""
    found = _source_or_problem(image_set)
    return None if isinstance(found, str) else found


def image_set_names(*, image_set: ImageSet) -> list[str]:
    """The example names in canonical order (a folder of images is named by them)."""
    namer = image_set_example_namer(image_set=image_set)
    return [namer(index) for index in range(image_set.size)]
