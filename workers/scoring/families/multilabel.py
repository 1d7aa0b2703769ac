"""Expert multi-label annotations (Shankar et al. 2020, as updated by Vasudevan et al. 2022):
each candidate class of an image judged correct, wrong or unclear; the accuracy is the mean
over classes (docs/metrics.md §5). Bundle kind `multi`, layout `human_accuracy`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .. import revisions, upgrades
from ..datasets import DataError, imagenet_file_name
from ..hits import NovelPairs, Record, in_keys, judged_pairs, novel_pairs
from ..label_set_builders import CompiledLabelSet
from ..multilabel_annotations import build_multilabel_arrays, collapse_keys, organism_mask
from ..predictions import Predictions
from ..stats import class_mean_record
from .base import (
    CLASS_MEAN_NORMAL,
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
    Refuse,
    Setting,
)
from .real import accepted_hits

SHANKAR2020 = Citation(
    "shankar2020", ("Shankar, Vaishaal", "Roelofs, Rebecca", "Mania, Horia",
                    "Fang, Alex", "Recht, Benjamin", "Schmidt, Ludwig"),
    "Evaluating Machine Accuracy on ImageNet", "ICML", 2020,
    "https://arxiv.org/abs/2007.00347")

VASUDEVAN2022 = Citation(
    "vasudevan2022", ("Vasudevan, Vijay", "Caine, Benjamin", "Gontijo-Lopes, Raphael",
                      "Fridovich-Keil, Sara", "Roelofs, Rebecca"),
    "When does dough become a bagel? Analyzing the remaining mistakes on ImageNet",
    "NeurIPS", 2022, "https://arxiv.org/abs/2205.04596")


# The built-in class-collapse map of ImageNet (Vasudevan et al. 2022, appendix G).
BUILTIN_COLLAPSE = "imagenet-vasudevan2022"


@dataclass(frozen=True)
class HumanAccuracyFields(LabelSetFields):
    """The original labels, the annotation file (a bundle file, or a server setting that
    names it: it may not be redistributed) and the class-collapse map (docs/bundles.md
    §5.3): BUILTIN_COLLAPSE, "none" or a JSON file of [accepted, also correct] pairs."""

    original: str
    annotations: str | None
    annotations_setting: str | None
    collapse: str

    def references(self) -> tuple[Reference, ...]:
        return (Reference("original", self.original, "original", "a label set of kind 'single'",
                          same_example_set=True),)

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        files = layout.files_of(self.original)
        files += (layout.classes_file,) if layout.classes_file else ()
        files += (self.annotations,) if self.annotations else ()
        return files + ((self.collapse,) if self.collapse not in ("none", BUILTIN_COLLAPSE)
                        else ())

    def setting(self, layout: BundleLayout) -> Setting | None:
        if self.annotations_setting is None:
            return None
        return Setting(self.annotations_setting, "annotations_setting")

    def check(self, layout: BundleLayout, example_set: str, refuse: Refuse) -> None:
        if not layout.classes_key_field:
            raise refuse("layout", "the human_accuracy layout names classes by key: give "
                         "[classes] a key_field", "bad_value")


def _parse(table: ManifestTable) -> list[HumanAccuracyFields]:
    original = table.slug("original", "original")
    annotations = table.path("annotations", None)
    annotations_setting = table.string("annotations_setting", None)
    if table.has("annotations") == table.has("annotations_setting"):
        raise table.error("bad_value", "annotations",
                          "give exactly one of annotations and annotations_setting")
    collapse = table.string("collapse", "none")
    if collapse not in (BUILTIN_COLLAPSE, "none"):
        collapse = table.path("collapse")
    return [HumanAccuracyFields(original=original, annotations=annotations,
                                annotations_setting=annotations_setting, collapse=collapse)]


def human_accuracy_arrays(files: BundleFiles, ls: LabelSetDef, *,
                          listed: Sequence[str] | None = None, raw: Any = None) -> Built:
    """Multi-label ImageNet (docs/metrics.md §5) from `ls`'s annotations (`raw`, when already
    read), or with `listed` (example names) a subset of it such as ImageNet-M (§6)."""
    fields = ls.fields
    assert isinstance(fields, HumanAccuracyFields)
    field = f"label_sets.{ls.slug}"
    if files.size(ls.example_set) != 50_000 or files.num_classes != 1000:
        raise files.error("bad_value", "the human_accuracy layout is ImageNet's: 50,000 "
                          "validation images and 1,000 classes", field=f"{field}.layout")
    if raw is None:
        raw = human_accuracy_annotations(files, ls)
    if listed is not None:
        raw = {**raw, "imagenet_m": list(listed)} if isinstance(raw, dict) else raw
    try:
        arrays, meta = build_multilabel_arrays(
            raw, original=files.labels_of(fields.original), wnids=files.class_keys or (),
            imagenet_m=listed is not None,
        )
    except (DataError, AttributeError, TypeError, KeyError, ValueError, IndexError) as error:
        raise files.error("bad_file", f"not in the human_accuracy layout: {error}",
                          field=f"{field}.annotations") from None
    if listed is None and fields.collapse != BUILTIN_COLLAPSE:
        pairs = [] if fields.collapse == "none" else _collapse_pairs(files, ls, fields.collapse)
        arrays["collapsed_keys"] = _widen(arrays["accepted_keys"], pairs, 1000)
    return arrays, meta


def human_accuracy_annotations(files: BundleFiles, ls: LabelSetDef) -> Any:
    """The annotation file's JSON, from the bundle or from the file its setting names."""
    fields = ls.fields
    assert isinstance(fields, HumanAccuracyFields)
    field = f"label_sets.{ls.slug}"
    if fields.annotations:
        return files.read_json(fields.annotations, field=f"{field}.annotations")
    assert fields.annotations_setting is not None
    return files.read_setting_json(fields.annotations_setting,
                                   field=f"{field}.annotations_setting",
                                   unset_field=f"{field}.annotations")


def _collapse_pairs(files: BundleFiles, ls: LabelSetDef, file: str) -> list[tuple[int, int]]:
    field = f"label_sets.{ls.slug}.collapse"
    raw = files.read_json(file, field=field)
    c = files.num_classes
    if not isinstance(raw, list) or not all(
        isinstance(p, list) and len(p) == 2
        and all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < c for k in p)
        for p in raw
    ):
        raise files.error("bad_file", f"expected a JSON list of [accepted, also correct] "
                          f"class id pairs in 0..{c - 1}", file=file, field=field)
    return [(a, b) for a, b in raw]


def _widen(accepted_keys: np.ndarray, pairs: list[tuple[int, int]], c: int) -> np.ndarray:
    """Accepted keys plus (example, b) wherever (example, a) is accepted, for each (a, b)."""
    examples, labels = np.divmod(accepted_keys, c)
    extra = [accepted_keys] + [examples[labels == a] * c + b for a, b in pairs]
    return np.unique(np.concatenate(extra))


def _build(files: BundleFiles, ls: LabelSetDef) -> Built:
    return human_accuracy_arrays(files, ls)


def _score(ls: CompiledLabelSet, preds: Predictions,
           inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """Correct if in correct + unclear; the accuracy is the mean of the per-class accuracies,
    classes keyed by the original label (the pooled share of images too); class-collapse
    variant; organism/object split (means over those classes)."""
    a = ls.arrays
    if "original_labels" not in a:
        raise ValueError(
            f"label set {ls.slug!r} lacks 'original_labels' (compiled by an older builder): "
            "the class-mean accuracy needs them; `manage.py scores_recompute` upgrades it")
    mask = a["mask"]
    examples = np.arange(ls.size)
    top1 = preds.topk[:, 0]
    accepted, judged = judged_pairs(ls, examples, top1)
    collapsed = in_keys(a["collapsed_keys"], examples, top1, ls.num_classes)
    classes = a["original_labels"][mask]
    organism = organism_mask()
    hits = accepted[mask]

    def mean(hit: np.ndarray, among: np.ndarray | None = None) -> Record:
        return class_mean_record(hit, classes, num_classes=ls.num_classes, among=among)

    record = mean(hits)
    record["collapsed"] = mean(collapsed[mask])
    record["organism"] = mean(hits, organism)
    record["object"] = mean(hits, ~organism)
    novel = novel_pairs(ls, preds, judged)
    record["novel_count"] = len(novel)
    return record, novel


def _facts(summary: Mapping[str, Any]) -> list[Fact]:
    included, organism = summary_int(summary, "included"), summary_int(summary,
                                                                      "organism_included")
    return facts_from([
        ("annotated", "Annotated images", summary_int(summary, "annotated")),
        ("problematic", "Problematic images (removed)", summary_int(summary, "problematic")),
        ("included", "Images evaluated", included),
        ("organism", "of which organism classes", organism),
        ("object", "of which object classes",
         None if included is None or organism is None else included - organism),
    ])


def export_multilabel(
    multilabel: CompiledLabelSet,
    subset: CompiledLabelSet | None,
    wnids: Sequence[str],
) -> dict[str, Any]:
    """A multilabel version (and the subset) in the human_accuracy_v3.0.0.json layout.

    initial_annots: every annotated example (and any with a judged pair), its wnid lists
    sorted, a key absent where its list is empty; problematic_images: {name: {}} for the
    annotated examples outside the mask (the reasons are not kept); imagenet_m: the sorted
    file names of the listed subset's mask (left out without a subset set). The labels come
    from `multilabel`, which may be ahead of the subset (review revises multilabel); a
    judgement the subset has on its own images and `multilabel` lacks would be lost, so it
    is a ValueError. A problematic image that was never annotated is not kept
    by the builder, so it cannot be exported.
    """
    revisions.require_arrays(multilabel, ["mask", "annotated", "correct_keys", "unclear_keys",
                                          "wrong_keys"])
    c = multilabel.num_classes
    if len(wnids) != c:
        raise ValueError(f"export_multilabel needs {c} wnids, got {len(wnids)}")
    a = multilabel.arrays
    lists = {"correct": "correct_keys", "wrong": "wrong_keys", "unclear": "unclear_keys"}
    entries: dict[int, dict[str, list[str]]] = {
        int(e): {} for e in np.flatnonzero(a["annotated"])
    }
    for judgement, name in lists.items():
        examples, classes = np.divmod(a[name], c)
        for e, k in zip(examples.tolist(), classes.tolist(), strict=True):
            entries.setdefault(e, {}).setdefault(judgement, []).append(wnids[k])
    out: dict[str, Any] = {
        "initial_annots": {
            imagenet_file_name(e): {j: sorted(entries[e][j]) for j in lists if j in entries[e]}
            for e in sorted(entries)
        },
        "problematic_images": {
            imagenet_file_name(int(e)): {} for e in np.flatnonzero(a["annotated"] & ~a["mask"])
        },
    }
    if subset is not None:
        revisions.require_arrays(subset, ["mask", *lists.values()])
        if (subset.size, subset.num_classes) != (multilabel.size, c):
            raise ValueError(f"label sets {multilabel.slug!r} and {subset.slug!r} differ in "
                             "size or classes")
        m_mask = subset.arrays["mask"]
        for name in lists.values():
            theirs = subset.arrays[name]
            lost = np.setdiff1d(theirs[m_mask[theirs // c]], a[name])
            if lost.size:
                raise ValueError(
                    f"label set {subset.slug!r} has a judgement that {multilabel.slug!r} "
                    f"lacks on {imagenet_file_name(int(lost[0] // c))} ({name})"
                )
        out["imagenet_m"] = sorted(imagenet_file_name(int(e)) for e in np.flatnonzero(m_mask))
    return out


def revise_lists(parent: CompiledLabelSet, touched: np.ndarray,
                  by_kind: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A multi-label set's arrays with each touched pair moved to its verdict's list."""
    a = parent.arrays
    correct = revisions.keys_replace(a["correct_keys"], touched, by_kind["correct"])
    unclear = revisions.keys_replace(a["unclear_keys"], touched, by_kind["unclear"])
    wrong = revisions.keys_replace(a["wrong_keys"], touched, by_kind["wrong"])
    accepted = np.union1d(correct, unclear).astype(np.int64)
    arrays = dict(a)
    arrays.update(correct_keys=correct, unclear_keys=unclear, wrong_keys=wrong,
                  accepted_keys=accepted)
    return arrays


def revise_multilabel(
    parent: CompiledLabelSet,
    touched: np.ndarray,
    by_kind: Mapping[str, np.ndarray],
    examples: np.ndarray,
    flagged: np.ndarray,
) -> revisions.Revised:
    a = parent.arrays
    revisions.require_arrays(parent, ["mask", "correct_keys", "unclear_keys", "wrong_keys",
                                      "annotated", "organism", "original_labels"])
    arrays = revise_lists(parent, touched, by_kind)
    meta = dict(parent.meta)
    arrays["collapsed_keys"] = collapse_keys(arrays["accepted_keys"])
    # As the builder: included = annotated minus problematic. A judged example is annotated
    # (a file with the verdict in it gives it an initial_annots entry); an example excluded
    # as problematic stays excluded.
    annotated = a["annotated"].copy()
    problematic = annotated & ~a["mask"]
    annotated[touched // parent.num_classes] = True
    problematic[flagged] = True
    mask = a["mask"].copy()
    mask[examples] = annotated[examples] & ~problematic[examples]
    arrays.update(mask=mask, annotated=annotated)
    meta.update(
        annotated=int(annotated.sum()),
        problematic=int((annotated & ~mask).sum()),
        included=int(mask.sum()),
        organism_included=int((mask & a["organism"]).sum()),
    )
    return arrays, meta


FAMILY = Family(
    name="multilabel",
    title="Multi-label annotations",
    bundle_kind="multi",
    layout="human_accuracy",
    label_kind="multi",
    arrays=("mask", "accepted_keys", "correct_keys", "unclear_keys", "wrong_keys",
            "collapsed_keys", "organism", "annotated", "original_labels"),
    parse=_parse,
    build=_build,
    score=_score,
    headline_hits=accepted_hits,
    headline="top-1, mean over classes",
    headline_label="Multi-label accuracy (top-1)",
    interval=CLASS_MEAN_NORMAL,
    figures=(Figure("Pooled over images", ("pooled_accuracy",),
                    note="share of the evaluated images"),
             Figure("With class collapse", ("collapsed",)),
             Figure("Organism classes", ("organism",)),
             Figure("Object classes", ("object",))),
    facts=_facts,
    plot_order=2,
    apply_verdicts=partial(revisions.apply_verdicts, revise=revise_multilabel),
    verdicts_need_annotation=True,
    export=export_multilabel,
    export_with="subset",
    upgrade=upgrades.compiled_upgrade,
    about=AboutText(
        "Expert multi-label annotations of ImageNet validation images (Shankar et al. 2020, "
        "as updated by Vasudevan et al. 2022).",
        ("Expert labellers marked each candidate class of an image correct, wrong or unclear. "
         "The images they found problematic are removed. A top-1 prediction is correct if it "
         "was judged correct or unclear.",
         "The accuracy shown, and ranked by, is the mean over classes, as the authors compute "
         "it: each image counts for the class of its original label, each class's accuracy is "
         "the share of its evaluated images predicted correctly, and the accuracy is the mean "
         "of those class accuracies (a class with no evaluated image is left out). Its 95% "
         "interval is the normal approximation with per-class binomial variances, not "
         "Clopper-Pearson, which is for a single proportion. The pooled accuracy, the share of "
         "all evaluated images predicted correctly, is reported beside it with its "
         "Clopper-Pearson interval; the count next to an accuracy is of images.",
         "Accuracy is also reported for organism and object classes apart (by the original "
         "label's WordNet ancestry; each the mean over its own classes), and with the "
         "class-collapse mapping of Vasudevan et al. (appendix G), which also accepts "
         "near-synonyms such as sunglass and sunglasses. "
         "Top-1 predictions that were never judged go to this server's review queue."),
        (SHANKAR2020, VASUDEVAN2022)),
)
