"""What the submission page shows for one score: the headline and the family's extra figures.

Pure functions over `Score.record` (the JSON the scoring core wrote), so the template renders
one uniform list of lines whatever the label-set family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.submissions.models import Score


@dataclass(frozen=True)
class Line:
    """One figure: an accuracy record (accuracy, correct, total, ci_*), a mean with an
    interval (value, ci_*), or plain text."""

    label: str
    kind: str  # "accuracy" | "mean" | "text"
    record: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    note: str = ""
    unit: str = "percent"  # "percent" (x100, 2 decimals) | "number" (4 decimals)


@dataclass(frozen=True)
class ScoreView:
    slug: str
    name: str
    family: str
    version_number: int
    version_hash: str
    image_set: str
    lines: list[Line]
    misses: list[dict[str, Any]] = field(default_factory=list)
    awaiting_review: int | None = None


HEADLINE = {
    "original": "Top-1 accuracy",
    "new_test_set": "Top-1 accuracy",
    "corrected": "Top-1 accuracy on corrected labels (pruned set)",
    "real": "ReaL accuracy (top-1)",
    "multilabel": "Multi-label accuracy (top-1)",
    "imagenet_m": "ImageNet-M: correct of the listed images",
    "cifar10h": "Plurality accuracy (human majority class)",
}


def _class_mean_note(record: dict[str, Any]) -> str:
    """For a mean of per-class accuracies (docs/metrics.md §1.7): its count is of images, its
    interval the normal approximation, not Clopper-Pearson; "" for any other record."""
    classes = record.get("classes_evaluated")
    if classes is None:
        return ""
    return f"mean over {classes:,} classes; normal-approximation interval"


def _acc(label: str, record: Any, note: str = "") -> Line | None:
    if not isinstance(record, dict) or record.get("total") in (None, 0):
        return None
    return Line(label, "accuracy", record, note=note or _class_mean_note(record))


def score_view(score: Score) -> ScoreView:
    record: dict[str, Any] = score.record or {}
    family = record.get("family") or score.label_set.family
    headline = {"accuracy": score.accuracy, "correct": score.correct, "total": score.total,
                "ci_low": score.ci_low, "ci_high": score.ci_high}
    lines: list[Line] = [Line(HEADLINE.get(family, "Accuracy"), "accuracy", headline,
                              note=_class_mean_note(record))]
    extra: list[Line | None] = []
    if family in ("original", "new_test_set", "corrected"):
        extra.append(_acc("Top-5 accuracy", record.get("top5")))
    if family == "corrected":
        correctable = record.get("correctable") or {}
        extra.append(_acc("Correctable set: Acc@1 (original labels)", correctable.get("acc1")))
        extra.append(_acc("Correctable set: cAcc@1 (corrected labels)", correctable.get("cacc1")))
        extra.append(_acc("Original labels on the same pruned set",
                          record.get("original_on_pruned")))
    elif family == "real":
        extra.append(_acc("2nd prediction in the ReaL list", record.get("second")))
        extra.append(_acc("3rd prediction in the ReaL list", record.get("third")))
    elif family == "multilabel":
        extra.append(_acc("Pooled over images", record.get("pooled_accuracy"),
                          note="share of the evaluated images"))
        extra.append(_acc("With class collapse", record.get("collapsed")))
        extra.append(_acc("Organism classes", record.get("organism")))
        extra.append(_acc("Object classes", record.get("object")))
    elif family == "imagenet_m":
        lines = [Line("Correct of the listed images", "text",
                      text=f"{score.correct} of {score.total}"),
                 Line("Accuracy", "accuracy", headline)]
    elif family == "cifar10h":
        agreement = record.get("human_agreement")
        if isinstance(agreement, dict) and agreement.get("value") is not None:
            extra.append(Line("Human agreement (mean human probability of the prediction)",
                              "mean", agreement))
        entropy = record.get("cross_entropy")
        if isinstance(entropy, dict) and entropy.get("value") is not None:
            extra.append(Line("Cross-entropy against the human distribution", "mean", entropy,
                              note="lower is better", unit="number"))
    if family == "new_test_set" and record.get("gap") is not None:
        gap = float(record["gap"])
        extra.append(Line("Gap to original accuracy", "text", text=f"{gap * 100:.2f} points",
                          note="original test set accuracy minus this one"))
    lines += [line for line in extra if line is not None]
    novel = record.get("novel_count") if family in ("real", "multilabel") else None
    version = score.label_set_version
    return ScoreView(
        slug=score.label_set.slug, name=score.label_set.name, family=family,
        version_number=version.number, version_hash=version.content_hash,
        image_set=record.get("image_set", ""), lines=lines,
        misses=list(record.get("misses") or []) if family == "imagenet_m" else [],
        awaiting_review=int(novel) if novel is not None else None,
    )
