"""What the catalog rows of one benchmark hold, read from its bundle (docs/bundles.md): the
catalog specs, and the descriptive fields the specs do not carry (description, citations,
class and example names, which label sets feed review, vote vocabularies). Rewritten on every
load; never versioned. Used by leaderboard/catalog/bundle_loading.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workers.inference.preprocessing import preprocessing_of
from workers.inference.state_dicts import architecture_check
from workers.scoring.bundles import (
    Bundle,
    BundleData,
    BundleError,
    LabelSetDef,
    benchmark_spec_from_bundle,
)
from workers.scoring.catalog import BenchmarkSpec


@dataclass(frozen=True)
class BundleDefinition:
    """What the rows of one benchmark will hold: the catalog specs and the descriptive fields
    the specs do not carry."""

    spec: BenchmarkSpec
    benchmark_details: dict[str, Any]
    image_set_details: dict[str, dict[str, Any]]
    label_set_details: dict[str, dict[str, Any]]
    # Per hidden label set: its first phase's split (private mask or None, fraction, seed).
    hidden_splits: dict[str, tuple[np.ndarray | None, float | None, int | None]] = field(
        default_factory=dict)


def bundle_definition(bundle: Bundle, data: BundleData, *, source: str) -> BundleDefinition:
    """Reads the class names and the example names files (BundleError if they are bad)."""
    classes = data.classes
    image_set_details = {}
    for example_set in bundle.example_sets:
        names = data.names(example_set.slug)
        image_set_details[example_set.slug] = {
            "naming": example_set.naming,
            "name_pattern": example_set.pattern or "",
            "first_number": example_set.first_number,
            "example_names": ([names.name(i) for i in range(example_set.size)]
                              if example_set.naming == "file" else None),
            "images": ({k: v for k, v in dataclasses.asdict(example_set.images).items() if v}
                       if example_set.images is not None else {}),
        }
    return BundleDefinition(
        spec=benchmark_spec_from_bundle(bundle),
        benchmark_details={
            "description": bundle.description,
            "modality": bundle.modality,
            "citations": [bundle.citation(key) for key in bundle.cites],
            "headline": bundle.headline,
            "inputs": _inputs(bundle),
            "class_confusions": bundle.class_confusions or "",
            "class_names": list(classes.names),
            "class_keys": list(classes.keys) if classes.keys is not None else None,
            "source": source,
        },
        image_set_details=image_set_details,
        label_set_details={
            ls.slug: {"reviewable": ls.slug in bundle.reviewable, "bundle_kind": ls.kind,
                      "labels_hidden": ls.hidden, "release": ls.release,
                      "release_step": ls.step, **_vote_answers(ls)}
            for ls in bundle.label_sets
        },
        hidden_splits={ls.slug: (data.private_mask(ls), ls.split_fraction, ls.split_seed)
                       for ls in bundle.label_sets if ls.hidden},
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


def _vote_answers(ls: LabelSetDef) -> dict[str, Any]:
    """The params its family keeps of a label set's fields (a validated set's threshold and
    the answers its workers had, with what each means: docs/bundles.md §5.2), which the about
    page states; none for a family that keeps none."""
    params = ls.fields.params()
    return {"params": params} if params else {}
