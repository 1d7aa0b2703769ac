"""Reassessed labels (ReaL, Beyer et al. 2020): each image's list of labels raters accepted
(docs/metrics.md §4). Bundle kind `multi`, layout `real`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .. import label_set_builders as builders
from .. import revisions
from ..hits import NovelPairs, Record, hits_record, in_keys, judged_pairs, novel_pairs
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from ..stats import accuracy_record as hits_record_counts
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
from .declaration import (
    BundleFiles,
    BundleLayout,
    LabelSetDef,
    LabelSetFields,
    ManifestTable,
    Reference,
)

BEYER2020 = Citation(
    "beyer2020", ("Beyer, Lucas", "Hénaff, Olivier J.", "Kolesnikov, Alexander",
                  "Zhai, Xiaohua", "van den Oord, Aäron"),
    "Are we done with ImageNet?", "arXiv:2006.07159", 2020,
    "https://arxiv.org/abs/2006.07159")


@dataclass(frozen=True)
class RealFields(LabelSetFields):
    """The original labels, each example's accepted class list (JSON) and the judged pairs
    (an .npz whose `info` lists (example name, class id)); docs/bundles.md §5.3."""

    original: str
    accepted: str
    judged: str

    def references(self) -> tuple[Reference, ...]:
        return (Reference("original", self.original, "original", "a label set of kind 'single'",
                          same_example_set=True),)

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        return layout.files_of(self.original) + (self.accepted, self.judged)


def _parse(table: ManifestTable) -> list[RealFields]:
    return [RealFields(original=table.slug("original", "original"),
                       accepted=table.path("accepted"), judged=table.path("judged"))]


def _build(files: BundleFiles, ls: LabelSetDef) -> Built:
    """ReaL (docs/metrics.md §4) on any example set: accepted lists and judged pairs."""
    fields = ls.fields
    assert isinstance(fields, RealFields)
    field = f"label_sets.{ls.slug}"
    original = files.labels_of(fields.original)
    n, c = files.size(ls.example_set), files.num_classes
    lists = files.read_json(fields.accepted, field=f"{field}.accepted")
    if not isinstance(lists, list) or not all(isinstance(x, list) for x in lists):
        raise files.error("bad_file", "expected a JSON list of lists of class ids",
                          file=fields.accepted, field=f"{field}.accepted")
    if len(lists) != n:
        raise files.error("length_mismatch", f"{len(lists)} lists for an example set of {n}",
                          file=fields.accepted, field=f"{field}.accepted")
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=n)
    flat = [k for x in lists for k in x]
    if not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < c for k in flat):
        raise files.error("label_out_of_range", f"a class id outside 0..{c - 1}",
                          file=fields.accepted, field=f"{field}.accepted")
    examples = np.repeat(np.arange(n), lengths)
    accepted = builders.pair_keys(examples, np.array(flat, dtype=np.int64), c)
    info = files.read_npz_member(fields.judged, "info", field=f"{field}.judged")
    if info.ndim != 2 or info.shape[1] != 2 or info.dtype.kind not in "US":
        raise files.error("bad_file", "`info` must be (example name, class id) text pairs",
                          file=fields.judged, field=f"{field}.judged")
    rated_examples = files.example_indices(ls.example_set, info[:, 0].tolist(),
                                           file=fields.judged, field=f"{field}.judged")
    try:
        rated_classes = info[:, 1].astype(np.int64)
    except (ValueError, OverflowError):
        raise files.error("bad_file", "a class id in `info` is not an integer",
                          file=fields.judged, field=f"{field}.judged") from None
    if ((rated_classes < 0) | (rated_classes >= c)).any():
        raise files.error("label_out_of_range", f"a class id outside 0..{c - 1}",
                          file=fields.judged, field=f"{field}.judged")
    rated = builders.pair_keys(rated_examples, rated_classes, c)
    return builders.real_arrays(accepted=accepted, rated=rated, rated_examples=rated_examples,
                                original=original, num_classes=c)


def _score(ls: CompiledLabelSet, preds: Predictions,
           inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """Top-1 in the ReaL list, over images with a non-empty list; 2nd and 3rd too."""
    mask = ls.arrays["mask"]
    examples = np.arange(ls.size)
    accepted, judged = judged_pairs(ls, examples, preds.topk[:, 0])
    record = hits_record(accepted, mask)
    for position, name in ((1, "second"), (2, "third")):
        if preds.k > position:
            hit = in_keys(
                ls.arrays["accepted_keys"], examples, preds.topk[:, position], ls.num_classes
            )
            record[name] = hits_record(hit, mask)
        else:
            record[name] = None
    novel = novel_pairs(ls, preds, judged)
    record["novel_count"] = len(novel)
    return record, novel


def revised_record(old: CompiledLabelSet, new: CompiledLabelSet, record: Record,
                   hits: np.ndarray, examples: np.ndarray, tops: np.ndarray
                   ) -> tuple[Record, np.ndarray]:
    """A submission's record and headline hits on `new`, from those on `old` (its parent,
    which differs only in which pairs are judged how: the same mask) and its top-k at the
    `examples` where they differ (`tops` [example, k], -1 past its own k): `_score`'s record
    and `accepted_hits`, exactly. Every count is a sum over included examples of terms that
    depend only on the example's own pairs, so only those examples' terms change."""
    mask = new.arrays["mask"]
    at = examples[mask[examples]]  # the changed examples that count
    top = tops[mask[examples]]

    def pairs(ls: CompiledLabelSet, keys: str, position: int) -> np.ndarray:
        return in_keys(ls.arrays[keys], at, top[:, position], ls.num_classes)

    def gained(position: int) -> int:
        """Accepted pairs at `position` gained minus lost, over the changed examples."""
        return int(np.count_nonzero(pairs(new, "accepted_keys", position))
                   - np.count_nonzero(pairs(old, "accepted_keys", position)))

    out = dict(record)
    total = record["total"]
    out.update(hits_record_counts(record["correct"] + gained(0), total))
    for position, name in ((1, "second"), (2, "third")):
        if record.get(name) is not None:  # the submission has a guess at that position
            out[name] = hits_record_counts(record[name]["correct"] + gained(position), total)
    judged_new = pairs(new, "accepted_keys", 0) | pairs(new, "wrong_keys", 0)
    judged_old = pairs(old, "accepted_keys", 0) | pairs(old, "wrong_keys", 0)
    out["novel_count"] = record["novel_count"] - int(np.count_nonzero(judged_new)
                                                     - np.count_nonzero(judged_old))
    out["version_hash"] = new.content_hash
    hits = hits.copy()
    hits[np.searchsorted(np.flatnonzero(mask), at)] = pairs(new, "accepted_keys", 0)
    return out, hits


def accepted_hits(ls: CompiledLabelSet, preds: Predictions) -> np.ndarray:
    """Top-1 in the accepted pairs, over the examples of the inclusion mask."""
    examples = np.flatnonzero(ls.arrays["mask"])
    return in_keys(ls.arrays["accepted_keys"], examples, preds.topk[examples, 0],
                   ls.num_classes)


def _facts(summary: Mapping[str, Any]) -> list[Fact]:
    return facts_from([
        ("included", "Images with a non-empty label list", summary_int(summary, "included")),
        ("excluded", "Images excluded (empty list)", summary_int(summary, "excluded")),
        ("rated_images", "Images the raters judged", summary_int(summary, "rated_images")),
        ("accepted_pairs", "Accepted (image, label) pairs", summary_int(summary, "accepted_pairs")),
        ("wrong_pairs", "Pairs judged wrong", summary_int(summary, "wrong_pairs")),
    ])


def export_real(real: CompiledLabelSet, _with: CompiledLabelSet | None = None,
                _class_keys: Sequence[str] = ()) -> list[list[int]]:
    """A real version in the real.json layout: per example its sorted accepted class ids,
    an empty list where the mask excludes the example."""
    revisions.require_arrays(real, ["mask", "accepted_keys"])
    examples, classes = np.divmod(real.arrays["accepted_keys"], real.num_classes)
    keep = real.arrays["mask"][examples]
    out: list[list[int]] = [[] for _ in range(real.size)]
    for e, k in zip(examples[keep].tolist(), classes[keep].tolist(), strict=True):
        out[e].append(k)
    return out


def revise_real(
    parent: CompiledLabelSet,
    touched: np.ndarray,
    by_kind: Mapping[str, np.ndarray],
    examples: np.ndarray,
    flagged: np.ndarray,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    a = parent.arrays
    revisions.require_arrays(parent, ["mask", "accepted_keys", "wrong_keys"])
    n, c = parent.size, parent.num_classes
    accepted = revisions.keys_replace(a["accepted_keys"], touched, by_kind["correct"])
    # ReaL counts only accepted labels as correct. An unclear pair has been judged and not
    # accepted, so it goes to the wrong list: a miss when predicted, and no longer novel.
    wrong = revisions.keys_replace(a["wrong_keys"], touched,
                                   np.union1d(by_kind["wrong"], by_kind["unclear"]))
    problematic = a["problematic"].copy() if "problematic" in a else np.zeros(n, dtype=bool)
    problematic[flagged] = True
    # Included = a non-empty ReaL list (as real.json: an empty list excludes the image) and
    # not flagged problematic. Recomputed for touched examples only: a correct verdict
    # includes an example whose list was empty, a wrong verdict on its last accepted label
    # excludes it, and an example flagged problematic is never included again.
    has_label = np.zeros(n, dtype=bool)
    has_label[accepted // c] = True
    mask = a["mask"].copy()
    mask[examples] = has_label[examples] & ~problematic[examples]
    arrays = dict(a)
    arrays.update(mask=mask, accepted_keys=accepted, wrong_keys=wrong)
    meta = dict(parent.meta)
    meta.update(
        included=int(mask.sum()),
        excluded=int(n - mask.sum()),
        accepted_pairs=int(accepted.size),
        wrong_pairs=int(wrong.size),
    )
    if problematic.any():
        arrays["problematic"] = problematic
        meta["problematic"] = int(problematic.sum())
    return arrays, meta


FAMILY = Family(
    name="real",
    title="Reassessed labels (ReaL)",
    bundle_kind="multi",
    layout="real",
    label_kind="multi",
    arrays=("mask", "accepted_keys", "wrong_keys"),
    parse=_parse,
    build=_build,
    score=_score,
    headline_hits=accepted_hits,
    headline="top-1",
    headline_label="ReaL accuracy (top-1)",
    figures=(Figure("2nd prediction in the ReaL list", ("second",)),
             Figure("3rd prediction in the ReaL list", ("third",))),
    facts=_facts,
    plot_order=1,
    apply_verdicts=partial(revisions.apply_verdicts, revise=revise_real),
    export=export_real,
    revised_record=revised_record,
    about=AboutText(
        "Reassessed labels (ReaL): every label the raters judged to fit the image, so an image "
        "may have several right answers, or none.",
        ("Raters judged (image, label) pairs proposed by a panel of models together with the "
         "original label; the pairs they accepted form each image's list of labels. A top-1 "
         "prediction is correct if it is in the list; images whose list is empty are "
         "excluded. With top-k predictions, the 2nd and 3rd predictions are scored the same way.",
         "A top-1 prediction the raters never judged (neither accepted nor rated) is novel: it "
         "goes to this server's review queue, and each panel decision makes a new version."),
        (BEYER2020,)),
)
