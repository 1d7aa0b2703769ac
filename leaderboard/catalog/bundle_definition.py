"""What the catalog rows of one benchmark hold, read from its bundle (docs/bundles.md): the
catalog specs, and the descriptive fields the specs do not carry (description, citations,
class and example names, which label sets feed review, vote vocabularies). Rewritten on every
load; never versioned. Used by leaderboard/catalog/bundle_loading.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workers.scoring.bundles import Bundle, BundleData, LabelSetDef, benchmark_spec_from_bundle
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
        }
    return BundleDefinition(
        spec=benchmark_spec_from_bundle(bundle),
        benchmark_details={
            "description": bundle.description,
            "modality": bundle.modality,
            "citations": [bundle.citation(key) for key in bundle.cites],
            "headline": bundle.headline,
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


def _vote_answers(ls: LabelSetDef) -> dict[str, Any]:
    """The params its family keeps of a label set's fields (a validated set's threshold and
    the answers its workers had, with what each means: docs/bundles.md §5.2), which the about
    page states; none for a family that keeps none."""
    params = ls.fields.params()
    return {"params": params} if params else {}
