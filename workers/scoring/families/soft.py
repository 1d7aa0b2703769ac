"""Soft labels: the distribution of many human labels per example (CIFAR-10H, Peterson et al.
2019; docs/metrics.md §7). Bundle kind `soft`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..hits import CROSS_ENTROPY_EPS, NovelPairs, Record, hits_record
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

PETERSON2019 = Citation(
    "peterson2019", ("Peterson, Joshua C.", "Battleday, Ruairidh M.",
                     "Griffiths, Thomas L.", "Russakovsky, Olga"),
    "Human uncertainty makes classification more robust", "ICCV", 2019,
    "https://arxiv.org/abs/1908.07086")


@dataclass(frozen=True)
class SoftFields(LabelSetFields):
    """Probabilities per example and class, or vote counts normalised into them (.npy of
    shape [examples, classes]); docs/bundles.md §5.5. Exactly one is given."""

    probabilities: str | None = None
    counts: str | None = None

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        return (self.probabilities or self.counts or "",)


def _parse(table: ManifestTable) -> list[SoftFields]:
    fields = SoftFields(probabilities=table.path("probabilities", None),
                        counts=table.path("counts", None))
    if table.has("probabilities") == table.has("counts"):
        raise table.error("bad_value", "probabilities",
                          "give exactly one of probabilities and counts")
    return [fields]


def _build(files: BundleFiles, ls: LabelSetDef) -> Built:
    """Probabilities (or vote counts, normalised) per example and class."""
    fields = ls.fields
    assert isinstance(fields, SoftFields)
    field = f"label_sets.{ls.slug}"
    key = "probabilities" if fields.probabilities else "counts"
    file = fields.probabilities or fields.counts
    assert file is not None
    values = files.read_npy(file, field=f"{field}.{key}")
    shape = (files.size(ls.example_set), files.num_classes)
    if values.shape != shape or values.dtype.kind not in "iuf":
        raise files.error("length_mismatch" if values.ndim == 2 else "bad_file",
                          f"expected numbers of shape {shape}, got {values.dtype} "
                          f"{values.shape}", file=file, field=f"{field}.{key}")
    values = values.astype(np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        raise files.error("bad_file", "has a negative, infinite or NaN entry", file=file,
                          field=f"{field}.{key}")
    sums = values.sum(axis=1, keepdims=True)
    if key == "counts":
        if (sums <= 0).any():
            raise files.error("bad_file", "an example has no votes", file=file,
                              field=f"{field}.counts")
        values = values / sums
    elif np.abs(sums - 1).max() > 1e-6:
        raise files.error("bad_file", "a row of probabilities does not sum to 1",
                          file=file, field=f"{field}.probabilities")
    return {"probs": values}, {"annotated": files.size(ls.example_set)}


def _plurality(ls: CompiledLabelSet, top1: np.ndarray) -> np.ndarray:
    # A prediction of any class tied for the most human votes counts as the plurality.
    probs = ls.arrays["probs"]
    return np.asarray(probs[np.arange(ls.size), top1] == probs.max(axis=1))


def _score(ls: CompiledLabelSet, preds: Predictions,
           inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """Plurality accuracy (headline), human agreement, cross-entropy if probabilities."""
    probs = ls.arrays["probs"]
    top1 = preds.topk[:, 0]
    record = hits_record(_plurality(ls, top1))
    record["human_agreement"] = mean_record(probs[np.arange(ls.size), top1])
    record["cross_entropy"] = None
    if preds.scores is not None and preds.scores_kind == "probabilities":
        model = np.clip(preds.scores.astype(np.float64), CROSS_ENTROPY_EPS, 1.0)
        record["cross_entropy"] = mean_record(-(probs * np.log(model)).sum(axis=1))
    return record, None


def _hits(ls: CompiledLabelSet, preds: Predictions) -> np.ndarray:
    return _plurality(ls, preds.topk[:, 0])


def _facts(summary: Mapping[str, Any]) -> list[Fact]:
    return facts_from([("annotated", "Images with human label distributions",
                        summary_int(summary, "annotated"))])


FAMILY = Family(
    name="soft",
    title="Soft labels",
    bundle_kind="soft",
    label_kind="soft",
    arrays=("probs",),
    parse=_parse,
    build=_build,
    score=_score,
    headline_hits=_hits,
    headline="plurality top-1",
    headline_label="Plurality accuracy (human majority class)",
    figures=(Figure("Human agreement (mean human probability of the prediction)",
                    ("human_agreement",), kind="mean"),
             Figure("Cross-entropy against the human distribution", ("cross_entropy",),
                    kind="mean", note="lower is better", unit="number")),
    facts=_facts,
    plot_order=3,
    about=AboutText(
        "Soft labels: the distribution of about 50 human labels for each CIFAR-10 test image.",
        ("Headline: plurality accuracy, where a prediction is correct if it is the label most "
         "humans chose (any class tied for the most counts). Human agreement is the mean over "
         "images of the share of humans who chose the predicted class. When a submission "
         "gives probabilities, their cross-entropy against the human distribution is reported "
         "too.",),
        (PETERSON2019,)),
)
