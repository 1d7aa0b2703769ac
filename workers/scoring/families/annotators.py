"""Several annotators' labels of every example, one label file per annotator (CIFAR-10N's
layout, Wei et al. 2022): scored by the plurality of their labels, and by agreement with any
of them (docs/families.md, "Several annotators"). Bundle kind `annotators`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..hits import NovelPairs, Record, hits_record
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from ..stats import mean_record
from .base import (
    AboutText,
    Built,
    Citation,
    Fact,
    Family,
    Figure,
    ScoreInputs,
    facts_from,
    summary_int,
)
from .declaration import BundleFiles, BundleLayout, LabelSetDef, LabelSetFields, ManifestTable

WEI2022 = Citation(
    "wei2022", ("Wei, Jiaheng", "Zhu, Zhaowei", "Cheng, Hao", "Liu, Tongliang", "Niu, Gang",
                "Liu, Yang"),
    "Learning with Noisy Labels Revisited: A Study Using Real-World Human Annotations",
    "ICLR", 2022, "https://arxiv.org/abs/2110.12088")

# Fewer than two annotators is a label file: declare it as kind `single`.
MIN_ANNOTATORS = 2


@dataclass(frozen=True)
class AnnotatorFields(LabelSetFields):
    """One label file per annotator (.npy, a class id per example, in example order)."""

    annotators: tuple[str, ...]

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        return self.annotators


def _parse(table: ManifestTable) -> list[AnnotatorFields]:
    files = table.path_list("annotators")
    if len(files) < MIN_ANNOTATORS:
        raise table.error("bad_value", "annotators", f"declare at least {MIN_ANNOTATORS} "
                          f"annotators' label files, got {len(files)} (one annotator's labels "
                          "are a label set of kind 'single')")
    if len(set(files)) != len(files):
        raise table.error("bad_value", "annotators", "an annotator's label file is named twice")
    return [AnnotatorFields(annotators=files)]


def _build(files: BundleFiles, ls: LabelSetDef) -> Built:
    """The annotators' labels side by side: `annotator_labels` [example, annotator]."""
    fields = ls.fields
    assert isinstance(fields, AnnotatorFields)
    prefix = f"label_sets.{ls.slug}.annotators"
    columns = [files.read_labels(path, example_set=ls.example_set, order=None,
                                 labels_field=f"{prefix}[{i}]", order_field="")
               for i, path in enumerate(fields.annotators)]
    labels = np.stack(columns, axis=1)
    unanimous = int(np.count_nonzero((labels == labels[:, :1]).all(axis=1)))
    return {"annotator_labels": labels}, {"annotators": len(columns), "unanimous": unanimous}


def _votes(ls: CompiledLabelSet, top1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per example: how many annotators gave the predicted class, and the most any class
    got."""
    labels = ls.arrays["annotator_labels"]
    counts = np.zeros((ls.size, ls.num_classes), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(ls.size), labels.shape[1]), labels.ravel()), 1)
    return counts[np.arange(ls.size), top1], counts.max(axis=1)


def _hits(ls: CompiledLabelSet, preds: Predictions) -> np.ndarray:
    """The plurality: the predicted class is one of those the most annotators gave (a tie
    counts for each class in it)."""
    given, most = _votes(ls, preds.topk[:, 0])
    return np.asarray(given == most)


def _score(ls: CompiledLabelSet, preds: Predictions,
           inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """Plurality accuracy over every example; agreement with any annotator; and the mean,
    over examples, of the share of annotators who gave the predicted class."""
    given, most = _votes(ls, preds.topk[:, 0])
    record = hits_record(given == most)
    record["any_annotator"] = hits_record(given > 0)
    record["agreement"] = mean_record(given / ls.arrays["annotator_labels"].shape[1])
    return record, None


def _facts(summary: Mapping[str, Any]) -> list[Fact]:
    return facts_from([
        ("annotators", "Annotators (one label each per example)",
         summary_int(summary, "annotators")),
        ("unanimous", "Examples all annotators labelled alike", summary_int(summary, "unanimous")),
    ])


FAMILY = Family(
    name="annotators",
    title="Several annotators",
    bundle_kind="annotators",
    label_kind="multi",
    arrays=("annotator_labels",),
    parse=_parse,
    build=_build,
    score=_score,
    headline_hits=_hits,
    headline="top-1 in the plurality",
    headline_label="Plurality accuracy (top-1 among the most-given labels)",
    figures=(Figure("Agrees with at least one annotator", ("any_annotator",)),
             Figure("Share of annotators agreeing (mean over examples)", ("agreement",),
                    kind="mean")),
    facts=_facts,
    about=AboutText(
        "Several annotators' labels of every example, each annotator's in a file of its own.",
        ("A top-1 prediction is correct under the plurality if it is one of the classes the "
         "most annotators gave the example (every class of a tie counts); the accuracy is over "
         "every example. Beside it: the share of examples whose prediction at least one "
         "annotator gave, and the mean share of annotators who gave it.",),
        (WEI2022,)),
)
