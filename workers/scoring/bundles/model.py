"""A parsed, checked benchmark bundle as frozen dataclasses (docs/bundles.md).

Paths are as the manifest writes them: relative, `/`-separated, resolved against the bundle's
file root (`Bundle.files`: the data directory or the manifest's folder) when data is read.
A validated label set declared with several thresholds is already expanded into one
`LabelSetDef` per threshold here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MODALITIES = ("image", "text", "audio")
FILE_ROOTS = ("data", "bundle")
NAMINGS = ("index", "pattern", "file")
CLASS_SOURCES = ("inline", "json_list", "folder_names", "vote_file", "records")
VOTE_IDS = ("index", "number", "name")
VOTE_LABELS = ("id", "name")
# What one vote means (docs/bundles.md §5.2); "none" is an answer that names no label.
VOTE_MEANINGS = ("original", "guessed", "both", "neither", "none")
IMAGE_FORMATS = ("folder", "idx")
# The built-in class-collapse map of ImageNet (Vasudevan et al. 2022, appendix G).
BUILTIN_COLLAPSE = "imagenet-vasudevan2022"
# How the one number per submission of a hidden label set is released (docs/metrics.md,
# released numbers of hidden label sets).
RELEASES = ("exact", "ladder", "parameter_free")
DEFAULT_RELEASE = "ladder"


@dataclass(frozen=True)
class ImagesDef:
    """Where the inputs of an example set are, for running checkpoints (never for scoring)."""

    format: str  # "folder" | "idx"
    path: str | None = None  # under the file root
    setting: str | None = None  # or a server setting that names a folder


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
class VoteFileDef:
    file: str
    vocabulary: tuple[tuple[str, str], ...]  # (vote key, meaning), in the manifest's order
    ids: str = "index"  # "index" | "number" | "name"
    id_prefix: str = ""  # ids "name": stripped from each id before the lookup
    id_suffix: str = ""  # ids "name": appended after stripping
    labels: str = "id"  # "id" | "name"
    id_field: str = "id"
    given_field: str = "given_original_label"
    guessed_field: str = "our_guessed_label"
    votes_field: str = "mturk"

    @property
    def meanings(self) -> dict[str, str]:
        return dict(self.vocabulary)


@dataclass(frozen=True)
class LabelSetDef:
    slug: str
    kind: str  # a bundle kind of the families' registry (families/registry.py)
    example_set: str
    name: str
    description: str
    citation: str  # a key of Bundle.citations, or "" for none
    labels: str | None = None  # single, new_test_set
    order: str | None = None  # single, new_test_set: JSON list, entry i names label i's example
    original: str | None = None  # validated, multi: the slug of the single set they build on
    votes: VoteFileDef | None = None  # validated
    threshold: int | None = None  # validated (one per expanded label set)
    layout: str | None = None  # multi: "real" | "human_accuracy"
    accepted: str | None = None  # multi real: JSON list of accepted class lists
    judged: str | None = None  # multi real: .npz whose `info` lists the judged pairs
    annotations: str | None = None  # multi human_accuracy: a file under the root ...
    annotations_setting: str | None = None  # ... or a server setting naming it (optional set)
    collapse: str | None = None  # multi human_accuracy: BUILTIN_COLLAPSE, "none" or a JSON file
    of: str | None = None  # subset: the multi label set it lists a subset of
    list_field: str | None = None  # subset: the annotation file's field listing the examples
    list_file: str | None = None  # subset: or a JSON list of example names
    probabilities: str | None = None  # soft
    counts: str | None = None  # soft
    pairs_with: str | None = None  # new_test_set: the label set it is compared with
    # Hidden (docs/bundles.md §5.7): the labels are never published; one number per submission
    # is released. None of the three changes what the label set compiles to.
    hidden: bool = False
    release: str = ""  # hidden: one of RELEASES (DEFAULT_RELEASE unless given); "" if public
    step: float | None = None  # release "ladder": its step size eta; None: 3/sqrt(n)
    # hidden, split in a public and a private part: the private part's seeded fraction, or a
    # JSON file of its example indices (neither changes what the label set compiles to)
    split_fraction: float | None = None
    split_seed: int | None = None
    split_private: str | None = None


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
