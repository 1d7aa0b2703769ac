"""Balanced accuracy: the mean over classes of each class's top-1 accuracy (per-class recall),
for test sets whose classes are not equally common (Brodersen et al. 2010; docs/families.md,
"Balanced accuracy"). Bundle kind `balanced`: a label file, as `single`."""

from __future__ import annotations

from ..hits import NovelPairs, Record
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from ..stats import class_mean_record
from .base import CLASS_MEAN_NORMAL, AboutText, Citation, Family, Figure, ScoreInputs
from .original import label_file_parse, single_labels_build, single_labels_hits

BRODERSEN2010 = Citation(
    "brodersen2010", ("Brodersen, Kay Henning", "Ong, Cheng Soon", "Stephan, Klaas Enno",
                      "Buhmann, Joachim M."),
    "The balanced accuracy and its posterior distribution", "ICPR", 2010,
    "https://doi.org/10.1109/ICPR.2010.764")


def _score(ls: CompiledLabelSet, preds: Predictions,
           inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """The mean of the per-class accuracies over the classes with an example (each example
    counts for its label's class), with the normal-approximation interval of a class mean;
    the plain share of examples beside it."""
    labels = ls.arrays["labels"]
    hits = preds.topk[:, 0] == labels
    return class_mean_record(hits, labels, num_classes=ls.num_classes), None


FAMILY = Family(
    name="balanced",
    title="Balanced accuracy",
    bundle_kind="balanced",
    label_kind="single",
    arrays=("labels",),
    parse=label_file_parse,
    build=single_labels_build,
    splittable=True,
    score=_score,
    headline_hits=single_labels_hits,
    headline="top-1, mean over classes",
    headline_label="Balanced accuracy (top-1, mean over classes)",
    interval=CLASS_MEAN_NORMAL,
    figures=(Figure("Pooled over examples", ("pooled_accuracy",),
                    note="share of all examples, as plain accuracy"),),
    about=AboutText(
        "The published labels, scored by balanced accuracy: every class weighs the same, "
        "however many test examples it has.",
        ("Each class's accuracy is the share of its examples whose top-1 prediction is their "
         "label; the balanced accuracy is the mean of those class accuracies over the classes "
         "with at least one example. Its 95% interval is the normal approximation with "
         "per-class binomial variances. The pooled accuracy, the share of all examples "
         "predicted correctly, is shown beside it; the count next to an accuracy is of "
         "examples.",),
        (BRODERSEN2010,)),
)
