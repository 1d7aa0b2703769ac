"""The labels published with a dataset: one class per example, on every example
(docs/metrics.md §2). Bundle kind `single`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..hits import NovelPairs, Record, hits_record, topk_record
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from .base import AboutText, Built, Family, Figure, ScoreInputs

TOP5 = Figure("Top-5 accuracy", ("top5",))


def single_labels_build(data: Any, ls: Any) -> Built:
    """The label file's labels, in example order (a bundle's `single` or `new_test_set`)."""
    return {"labels": data.single_labels(ls.slug)}, {}


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
    manifest_shape="labels",
    label_kind="single",
    arrays=("labels",),
    build=single_labels_build,
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
