"""The labels published with a dataset: one class per example, on every example
(docs/metrics.md §2). Bundle kind `single`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hits import NovelPairs, Record, hits_record, topk_record
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from .base import AboutText, Built, Family, Figure, ScoreInputs
from .declaration import BundleFiles, BundleLayout, LabelSetDef, LabelSetFields, ManifestTable

TOP5 = Figure("Top-5 accuracy", ("top5",))


@dataclass(frozen=True)
class LabelFileFields(LabelSetFields):
    """A label file (.npy, one class id per example) and, when its entries are not in the
    example set's order, a JSON list naming each entry's example (docs/bundles.md §5.1)."""

    labels: str
    order: str | None = None

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        return (self.labels,) + ((self.order,) if self.order else ())


def label_file_parse(table: ManifestTable) -> list[LabelFileFields]:
    return [LabelFileFields(labels=table.path("labels"), order=table.path("order", None))]


def single_labels_build(files: BundleFiles, ls: LabelSetDef) -> Built:
    """The label file's labels, in example order (a bundle's `single` or `new_test_set`)."""
    fields = ls.fields
    assert isinstance(fields, LabelFileFields)
    prefix = f"label_sets.{ls.slug}"
    return {"labels": files.read_labels(fields.labels, example_set=ls.example_set,
                                        order=fields.order, labels_field=f"{prefix}.labels",
                                        order_field=f"{prefix}.order")}, {}


def single_labels_score(ls: CompiledLabelSet, preds: Predictions,
                        inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """Top-1 and top-5 against one label per example, over every example."""
    labels = ls.arrays["labels"]
    record = hits_record(preds.topk[:, 0] == labels)
    record["top5"] = topk_record(preds.topk, labels)
    return record, None


def single_labels_hits(ls: CompiledLabelSet, preds: Predictions) -> np.ndarray:
    return np.asarray(preds.topk[:, 0] == ls.arrays["labels"])


FAMILY = Family(
    name="original",
    title="Original labels",
    bundle_kind="single",
    label_kind="single",
    arrays=("labels",),
    parse=label_file_parse,
    build=single_labels_build,
    splittable=True,
    score=single_labels_score,
    headline_hits=single_labels_hits,
    headline="top-1",
    headline_label="Top-1 accuracy",
    figures=(TOP5,),
    reference=True,
    about=AboutText(
        "The labels published with the dataset: one per example, on every example.",
        ("Top-1 and top-5 accuracy against the published labels, over every example. Every "
         "other label set is compared with this one: a leaderboard's rank shifts are the "
         "rank under the original labels minus the rank under the other label set.",),
        ()),
)
