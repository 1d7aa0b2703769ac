"""A new test set collected by the original dataset's procedure (Recht et al. 2019): scored as
original labels, with the gap to the same model's original accuracy (docs/metrics.md §8).
Bundle kind `new_test_set`."""

from __future__ import annotations

from dataclasses import dataclass

from .base import AboutText, Citation, Family, Figure
from .declaration import ManifestTable, Reference
from .original import (
    TOP5,
    LabelFileFields,
    single_labels_build,
    single_labels_hits,
    single_labels_score,
)

RECHT2019 = Citation(
    "recht2019", ("Recht, Benjamin", "Roelofs, Rebecca", "Schmidt, Ludwig", "Shankar, Vaishaal"),
    "Do ImageNet Classifiers Generalize to ImageNet?", "ICML", 2019,
    "https://arxiv.org/abs/1902.10811")



@dataclass(frozen=True)
class PairedLabelFileFields(LabelFileFields):
    """A label file, and the original test set's label set it is compared with (its gap)."""

    pairs_with: str = "original"

    def references(self) -> tuple[Reference, ...]:
        return (Reference("pairs_with", self.pairs_with, "original",
                          "a label set of kind 'single'", same_example_set=False,
                          builds_on=False),)


def _parse(table: ManifestTable) -> list[PairedLabelFileFields]:
    return [PairedLabelFileFields(labels=table.path("labels"), order=table.path("order", None),
                                  pairs_with=table.slug("pairs_with", "original"))]


FAMILY = Family(
    name="new_test_set",
    title="New test set",
    bundle_kind="new_test_set",
    label_kind="single",
    arrays=("labels",),
    parse=_parse,
    build=single_labels_build,
    splittable=True,
    score=single_labels_score,
    headline_hits=single_labels_hits,
    headline="top-1",
    headline_label="Top-1 accuracy",
    figures=(TOP5, Figure("Gap to original accuracy", ("gap",), kind="points",
                          note="original test set accuracy minus this one")),
    gap_to_reference=True,
    about=AboutText(
        "A new test set, collected from the same source by following the original dataset's "
        "procedure, to test whether models generalize beyond the test set they were tuned on.",
        ("Accuracy on the new images, and its gap to the same model's original test accuracy. "
         "Across the leaderboard, a linear fit new = a × original + b (with a bootstrap 95% "
         "band) and each model's residual from it.",),
        (RECHT2019,)),
)
