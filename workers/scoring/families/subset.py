"""A listed subset of another multi-label set's examples, scored as correct of the listed
(ImageNet-M, Vasudevan et al. 2022: the 68 images with the major mistakes left;
docs/metrics.md §6). Bundle kind `subset`."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from .. import revisions
from ..hits import NovelPairs, Record, hits_record, judged_pairs
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from .base import AboutText, Built, Fact, Family, ScoreInputs, facts_from, summary_int
from .multilabel import VASUDEVAN2022
from .real import accepted_hits


def _build(data: Any, ls: Any) -> Built:
    return data.human_accuracy_arrays(ls)


def _score(ls: CompiledLabelSet, preds: Predictions,
           inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """Correct out of the listed images, and the misses (named by the example namer)."""
    examples = np.flatnonzero(ls.arrays["mask"])
    top1 = preds.topk[examples, 0]
    accepted, _ = judged_pairs(ls, examples, top1)
    record = hits_record(accepted)
    names = inputs.class_names
    record["misses"] = [
        {
            "index": int(i),
            "file": inputs.example_name(int(i)),
            "predicted": int(c),
            **({"predicted_name": names[int(c)]} if names else {}),
        }
        for i, c in zip(examples[~accepted], top1[~accepted], strict=True)
    ]
    return record, None


def _facts(summary: Mapping[str, Any]) -> list[Fact]:
    return facts_from([("included", "Listed images", summary_int(summary, "included"))])


FAMILY = Family(
    name="subset",
    title="Listed subset",
    bundle_kind="subset",
    manifest_shape="subset",
    label_kind="multi",
    arrays=("mask", "accepted_keys", "correct_keys", "unclear_keys", "wrong_keys"),
    build=_build,
    score=_score,
    headline_hits=accepted_hits,
    headline="correct of listed",
    headline_label="Correct of the listed images",
    headline_as_count=True,
    facts=_facts,
    gallery="misses",
    apply_verdicts=partial(revisions.apply_verdicts, revise=revisions.revise_subset),
    about=AboutText(
        "ImageNet-M: the 68 validation images (in the published list) on which the best "
        "models still made major mistakes once every other error was explained away.",
        ("Vasudevan et al. reviewed the remaining mistakes of top models and listed the "
         "images where they were major. A prediction is correct if the multi-label "
         "annotations judged it correct or unclear; the score is the number correct of the "
         "listed images, and each submission's mistake gallery shows its misses.",),
        (VASUDEVAN2022,)),
)
