"""What the catalog rows of one benchmark hold, read from its bundle (docs/bundles.md): the
one place that says it, field by field (`BenchmarkRow`, `ExampleSetRow`, `LabelSetRow`), from
the parsed bundle and the files its `BundleData` reads (class names, example names).
Rewritten on every load; never versioned. Written by leaderboard/catalog/services.py's
`<entity>_sync`, for leaderboard/catalog/bundle_loading.py and the multi-label import.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from workers.inference.preprocessing import preprocessing_of
from workers.inference.state_dicts import architecture_check
from workers.scoring.bundles import (
    Bundle,
    BundleData,
    BundleError,
    ExampleSetDef,
    LabelSetDef,
    label_set_identity,
)


class BenchmarkRow(TypedDict):
    """A Benchmark row's fields (leaderboard/catalog/models.py), its slug apart."""

    name: str
    num_classes: int
    main_example_set: str
    description: str
    modality: str
    citations: list[str]
    headline: str
    inputs: dict[str, Any]
    class_confusions: str
    class_names: list[str]
    class_keys: list[str] | None
    source: str


class ExampleSetRow(TypedDict):
    """An ExampleSet row's fields, its slug and benchmark apart; `example_names` (a set named
    by file) goes to its ExampleSetNames row."""

    name: str
    size: int
    description: str
    naming: str
    name_pattern: str
    first_number: int
    example_names: list[str] | None
    images: dict[str, Any]
    texts: dict[str, Any]


class LabelSetRow(TypedDict):
    """A LabelSet row's fields, its slug and benchmark apart; `example_set` is the slug of
    the example set it is over."""

    example_set: str
    kind: str
    family: str
    name: str
    description: str
    citation: str
    params: dict[str, Any]
    reviewable: bool
    bundle_kind: str
    labels_hidden: bool
    release: str
    release_step: float | None


@dataclass(frozen=True)
class BundleDefinition:
    """What the rows of one benchmark will hold."""

    slug: str
    benchmark: BenchmarkRow
    example_sets: dict[str, ExampleSetRow]
    label_sets: dict[str, LabelSetRow]  # in the bundle's order
    # Per hidden label set: its first phase's split (private mask or None, fraction, seed).
    hidden_splits: dict[str, tuple[np.ndarray | None, float | None, int | None]] = field(
        default_factory=dict)


def builtin_source(bundle: Bundle) -> str:
    """A built-in bundle's Benchmark.source (leaderboard/catalog/models.py)."""
    return f"builtin:{bundle.manifest.name}"


def bundle_definition(bundle: Bundle, data: BundleData, *, source: str) -> BundleDefinition:
    """Reads the class names and the example names files (BundleError if they are bad)."""
    classes = data.classes
    return BundleDefinition(
        slug=bundle.slug,
        benchmark=BenchmarkRow(
            name=bundle.name,
            num_classes=bundle.classes.count,
            main_example_set=bundle.main_example_set,
            description=bundle.description,
            modality=bundle.modality,
            citations=[bundle.citation(key) for key in bundle.cites],
            headline=bundle.headline,
            inputs=_inputs(bundle),
            class_confusions=bundle.class_confusions or "",
            class_names=list(classes.names),
            class_keys=list(classes.keys) if classes.keys is not None else None,
            source=source,
        ),
        example_sets={s.slug: _example_set_row(s, data) for s in bundle.example_sets},
        label_sets={ls.slug: label_set_row(bundle, ls) for ls in bundle.label_sets},
        hidden_splits={ls.slug: (data.private_mask(ls), ls.split_fraction, ls.split_seed)
                       for ls in bundle.label_sets if ls.hidden},
    )


def label_set_row(bundle: Bundle, ls: LabelSetDef) -> LabelSetRow:
    """A label set's row, from the manifest alone (the about page lists a built-in one that
    is not loaded from it)."""
    identity = label_set_identity(bundle, ls)  # the same kind and family as its compiled set
    return LabelSetRow(
        example_set=ls.example_set,
        kind=identity["kind"],
        family=identity["family"],
        name=ls.name,
        description=ls.description,
        citation=bundle.citation(ls.citation),
        # what its family keeps of its fields (a validated set's threshold and the answers
        # its workers had, with what each means: docs/bundles.md §5.2), which the about
        # page states; {} for a family that keeps none
        params=ls.fields.params(),
        reviewable=ls.slug in bundle.reviewable,
        bundle_kind=ls.kind,
        labels_hidden=ls.hidden,
        release=ls.release,
        release_step=ls.step,
    )


def _example_set_row(example_set: ExampleSetDef, data: BundleData) -> ExampleSetRow:
    names = data.names(example_set.slug)
    return ExampleSetRow(
        name=example_set.name,
        size=example_set.size,
        description=example_set.description,
        naming=example_set.naming,
        name_pattern=example_set.pattern or "",
        first_number=example_set.first_number,
        example_names=([names.name(i) for i in range(example_set.size)]
                       if example_set.naming == "file" else None),
        images=({k: v for k, v in dataclasses.asdict(example_set.images).items() if v}
                if example_set.images is not None else {}),
        texts=({k: v for k, v in dataclasses.asdict(example_set.texts).items() if v}
               if example_set.texts is not None else {}),
    )


def _inputs(bundle: Bundle) -> dict[str, Any]:
    """What a checkpoint receives, as the Benchmark row keeps it ({}: no checkpoints); the
    architecture it names must be one the server defines, for its number of classes."""
    preprocessing = preprocessing_of(bundle)
    if preprocessing is None:
        return {}
    if preprocessing.architecture is not None:
        try:
            architecture_check(preprocessing.architecture, num_classes=bundle.classes.count)
        except ValueError as error:
            raise BundleError("bad_value", str(error), file=bundle.manifest.name,
                              field="inputs.architecture") from None
    stored = preprocessing.as_dict()
    del stored["description"]  # derived: the page writes it from the rest
    return stored
