"""A parsed, checked benchmark bundle as frozen dataclasses (docs/bundles.md).

Paths are as the manifest writes them: relative, `/`-separated, resolved against the bundle's
file root (`Bundle.files`: the data directory or the manifest's folder) when data is read.
A table that declares several label sets (a validated one with several thresholds) is
already expanded into one `LabelSetDef` each here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# A label set's declaration: the generic part and its family's own fields (their home).
from ..families.declaration import LabelSetDef

__all__ = ["LabelSetDef"]

MODALITIES = ("image", "text", "audio")
FILE_ROOTS = ("data", "bundle")
NAMINGS = ("index", "pattern", "file")
CLASS_SOURCES = ("inline", "json_list", "folder_names", "vote_file", "records")
# How an example set's images are stored, for running checkpoints (docs/bundles.md §4.1):
# a folder of image files named by the examples' names, an IDX file (MNIST), a python batch
# of the CIFAR releases, or a uint8 [N, H, W, C] .npy array.
IMAGE_FORMATS = ("folder", "idx", "cifar-batch", "npy")
# How an example set's texts are stored, for showing an example to reviewers (docs/bundles.md
# §4.2): a folder of UTF-8 text files named by the examples' names (IMDB's aclImdb/test).
TEXT_FORMATS = ("folder",)
COLORS = ("grayscale", "RGB")
# How the one number per submission of a hidden label set is released (docs/metrics.md,
# released numbers of hidden label sets).
RELEASES = ("exact", "ladder", "parameter_free")
DEFAULT_RELEASE = "ladder"


@dataclass(frozen=True)
class ImagesDef:
    """Where the inputs of an example set are, for running checkpoints (never for scoring)."""

    format: str  # one of IMAGE_FORMATS
    path: str | None = None  # under the file root
    setting: str | None = None  # or a server setting that names a folder


@dataclass(frozen=True)
class TextsDef:
    """Where the texts of an example set are, for showing an example (never for scoring)."""

    format: str  # one of TEXT_FORMATS
    path: str | None = None  # under the data directory
    setting: str | None = None  # or a server setting that names a folder


@dataclass(frozen=True)
class InputsDef:
    """What a model submitted as a checkpoint receives, and which network the server builds
    for a state dict (docs/bundles.md §2.1): declared by the benchmark, not known by slug."""

    shape: tuple[int, int, int]  # (C, H, W) of one image
    color: str  # one of COLORS
    mean: tuple[float, ...]  # per channel, after dividing the 0-255 pixels by 255
    std: tuple[float, ...]
    resize_shorter: int | None = None  # resize so that the shorter side has this many pixels
    center_crop: int | None = None  # then cut the central square of this size
    interpolation: str | None = None
    architecture: str | None = None  # a network the server defines, for safetensors uploads


@dataclass(frozen=True)
class ExampleSetDef:
    slug: str
    name: str
    size: int
    description: str
    naming: str  # "index" | "pattern" | "file"
    pattern: str | None = None  # naming "pattern": e.g. "ILSVRC2012_val_{number:08d}.JPEG"
    first_number: int = 1  # the number of example 0 under the pattern
    names_file: str | None = None  # naming "file": a JSON list, entry i names example i
    images: ImagesDef | None = None
    texts: TextsDef | None = None


@dataclass(frozen=True)
class ClassesDef:
    count: int
    source: str  # one of CLASS_SOURCES
    names: tuple[str, ...] = ()  # source "inline"
    file: str | None = None
    first_number: int = 1  # "folder_names": the folder number of class 0
    id_field: str = "cid"  # "records"
    name_field: str = "name"  # "records": a string, or a list whose first item is the name
    key_field: str | None = None  # "records": a stable key (e.g. a WordNet id)


@dataclass(frozen=True)
class Bundle:
    slug: str
    name: str
    description: str
    modality: str
    citations: tuple[tuple[str, str], ...]  # (key, text) of every citation the bundle uses
    cites: tuple[str, ...]  # the benchmark's own citations (keys)
    files: str  # "data" | "bundle"
    classes: ClassesDef
    example_sets: tuple[ExampleSetDef, ...]
    label_sets: tuple[LabelSetDef, ...]
    main_example_set: str
    headline: str
    reviewable: tuple[str, ...]
    manifest: Path  # the manifest file it was read from
    inputs: InputsDef | None = None  # None: the benchmark takes no checkpoints
    class_confusions: str | None = None  # an expert panel's confused class pairs (data dir)

    def citation(self, key: str) -> str:
        return dict(self.citations)[key] if key else ""

    def example_set(self, slug: str) -> ExampleSetDef:
        for example_set in self.example_sets:
            if example_set.slug == slug:
                return example_set
        raise KeyError(slug)

    def label_set(self, slug: str) -> LabelSetDef:
        for label_set in self.label_sets:
            if label_set.slug == slug:
                return label_set
        raise KeyError(slug)

    def root(self, data_dir: Path) -> Path:
        """The folder every relative path of the bundle is read from."""
        return Path(data_dir) if self.files == "data" else self.manifest.parent
