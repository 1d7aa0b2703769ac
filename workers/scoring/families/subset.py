"""A listed subset of another multi-label set's examples, scored as correct of the listed
(ImageNet-M, Vasudevan et al. 2022: the 68 images with the major mistakes left;
docs/metrics.md §6). Bundle kind `subset`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .. import revisions
from ..hits import NovelPairs, Record, hits_record, judged_pairs
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from .base import AboutText, Built, Fact, Family, ScoreInputs, facts_from, summary_int
from .declaration import (
    BundleFiles,
    BundleLayout,
    LabelSetDef,
    LabelSetFields,
    ManifestTable,
    Reference,
    Setting,
)
from .multilabel import (
    VASUDEVAN2022,
    human_accuracy_annotations,
    human_accuracy_arrays,
    revise_lists,
)
from .real import accepted_hits


@dataclass(frozen=True)
class SubsetFields(LabelSetFields):
    """The multi-label set it lists a subset of, and the list: a field of that set's
    annotation file, or a JSON list of example names (docs/bundles.md §5.4)."""

    of: str
    list_field: str | None
    list_file: str | None

    def references(self) -> tuple[Reference, ...]:
        return (Reference("of", self.of, "multilabel", "a multi human_accuracy label set",
                          same_example_set=None),)

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        return layout.files_of(self.of) + ((self.list_file,) if self.list_file else ())

    def setting(self, layout: BundleLayout) -> Setting | None:
        of = layout.setting_of(self.of)
        return None if of is None else Setting(of.name, "of")


def _parse(table: ManifestTable) -> list[SubsetFields]:
    fields = SubsetFields(of=table.slug("of"), list_field=table.string("list_field", None),
                          list_file=table.path("list_file", None))
    if table.has("list_field") == table.has("list_file"):
        raise table.error("bad_value", "list_field", "give exactly one of list_field and "
                          "list_file")
    return [fields]


def _build(files: BundleFiles, ls: LabelSetDef) -> Built:
    fields = ls.fields
    assert isinstance(fields, SubsetFields)
    of = files.definition(fields.of)
    field = f"label_sets.{ls.slug}"
    raw = human_accuracy_annotations(files, of)
    if fields.list_file:
        listed = files.read_json(fields.list_file, field=f"{field}.list_file")
    else:
        listed = raw.get(fields.list_field, []) if isinstance(raw, dict) else []
    if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
        raise files.error("bad_file", "the subset list is not a list of example names",
                          field=f"{field}.list_field")
    return human_accuracy_arrays(files, of, listed=listed, raw=raw)


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


def revise_subset(
    parent: CompiledLabelSet,
    touched: np.ndarray,
    by_kind: Mapping[str, np.ndarray],
    examples: np.ndarray,
    flagged: np.ndarray,
) -> revisions.Revised:
    """A listed subset (ImageNet-M): the list is fixed, so its mask ignores `problematic`,
    and, as the builder, it keeps only its listed examples' judgements."""
    revisions.require_arrays(parent, ["mask", "correct_keys", "unclear_keys", "wrong_keys"])
    arrays = revise_lists(parent, touched, by_kind)
    mask = parent.arrays["mask"]
    for name in ("correct_keys", "unclear_keys", "wrong_keys", "accepted_keys"):
        keys = arrays[name]
        arrays[name] = keys[mask[keys // parent.num_classes]]
    meta = dict(parent.meta)
    meta["included"] = int(mask.sum())
    return arrays, meta


FAMILY = Family(
    name="subset",
    title="Listed subset",
    bundle_kind="subset",
    label_kind="multi",
    arrays=("mask", "accepted_keys", "correct_keys", "unclear_keys", "wrong_keys"),
    parse=_parse,
    build=_build,
    score=_score,
    headline_hits=accepted_hits,
    headline="correct of listed",
    headline_label="Correct of the listed images",
    headline_as_count=True,
    facts=_facts,
    gallery="misses",
    apply_verdicts=partial(revisions.apply_verdicts, revise=revise_subset),
    about=AboutText(
        "ImageNet-M: the 68 validation images (in the published list) on which the best "
        "models still made major mistakes once every other error was explained away.",
        ("Vasudevan et al. reviewed the remaining mistakes of top models and listed the "
         "images where they were major. A prediction is correct if the multi-label "
         "annotations judged it correct or unclear; the score is the number correct of the "
         "listed images, and each submission's mistake gallery shows its misses.",),
        (VASUDEVAN2022,)),
)
