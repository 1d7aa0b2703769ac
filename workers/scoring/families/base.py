"""What a label-set family is: everything about one kind of label set, declared in one place
(docs/families.md). Each module of this package declares one `Family`; `registry` gathers them.

A family says which bundle kind it compiles from and which arrays that gives, how a submission
is scored against it (its record, and the per-example hits that the paired tests and the
leaderboard's intervals use), whether human review can change it and how, and what the pages
say about it (the submission page's figures, the about page's texts and counts). The web side
and the scoring core find all of this through the family, never by comparing its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..hits import NovelPairs, Record
from ..label_set_builders import CompiledLabelSet
from ..predictions import Predictions
from ..stats import CLASS_MEAN_CI_METHOD
from .declaration import Built, BundleFiles, LabelSetDef, LabelSetFields, ManifestTable

__all__ = ["Built", "BundleFiles", "LabelSetDef", "LabelSetFields", "ManifestTable"]
# Example index -> the name shown for it (a file name).
ExampleNamer = Callable[[int], str]

CLOPPER_PEARSON = "clopper_pearson"
# A mean of per-class accuracies: the normal approximation with per-class binomial variances
# (docs/metrics.md §1.7); its records name it in `ci_method`.
CLASS_MEAN_NORMAL = CLASS_MEAN_CI_METHOD
INTERVAL_METHODS = (CLOPPER_PEARSON, CLASS_MEAN_NORMAL)

@dataclass(frozen=True)
class ScoreInputs:
    """What some records need besides labels and predictions: the benchmark's class names
    (id order) and its example names, for records that list examples."""

    class_names: tuple[str, ...] | None
    example_name: ExampleNamer


@dataclass(frozen=True)
class Figure:
    """One line of the submission page beyond the headline: the record's value at `path`,
    an accuracy record (accuracy, correct, total, ci_*), a mean with an interval (value,
    ci_*), or a difference in points (`gap`)."""

    label: str
    path: tuple[str, ...]
    kind: str = "accuracy"  # "accuracy" | "mean" | "points"
    note: str = ""
    unit: str = "percent"  # "percent" (x100, 2 decimals) | "number" (4 decimals)


@dataclass(frozen=True)
class Fact:
    """A count of one label-set version worth showing on the about page."""

    key: str  # stable name, for the API
    label: str
    value: int


@dataclass(frozen=True)
class Citation:
    """A reference. A benchmark's own reference that no family or dataset entry is (a
    bundle's `[citations]` text) has only `text`."""

    key: str
    authors: tuple[str, ...]
    title: str
    venue: str
    year: int | None
    url: str
    text: str = ""  # the reference as the benchmark's bundle writes it

    @property
    def short(self) -> str:
        """"Northcutt et al. 2021", "Krizhevsky 2009"."""
        if not self.authors:
            return self.text
        first = self.authors[0].split(",")[0]
        return f"{first}{' et al.' if len(self.authors) > 1 else ''} {self.year}"

    @property
    def authors_text(self) -> str:
        return "; ".join(self.authors)


@dataclass(frozen=True)
class AboutText:
    """What the about page says about a family's label sets. `how` paragraphs may name
    `{placeholders}` that the family's `about_values` fills from a version's summary."""

    what: str
    how: tuple[str, ...]
    citations: tuple[Citation, ...]  # () = the benchmark's own dataset paper


def _no_facts(summary: Mapping[str, Any]) -> list[Fact]:
    return []


def _no_values(summary: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, str]:
    return {}


def summary_int(summary: Mapping[str, Any], key: str) -> int | None:
    """A count from a version's summary, None when absent or not a number."""
    value = summary.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def facts_from(pairs: Sequence[tuple[str, str, int | None]]) -> list[Fact]:
    """The facts whose value is known, in the order given."""
    return [Fact(key, label, value) for key, label, value in pairs if value is not None]


@dataclass(frozen=True)
class Family:
    # Stored in LabelSet.family and in every score record; generic, never a dataset's name.
    name: str
    title: str
    # The manifest's `kind` it compiles from (docs/bundles.md §5); where several families
    # share a kind, `layout` (below) picks this one.
    bundle_kind: str
    # "single" | "multi" | "soft": what one example's label is (LabelSet.kind).
    label_kind: str
    # The arrays every compiled set of the family has (scoring and review read them).
    arrays: tuple[str, ...]
    # Its own fields read from its manifest table: one per label set the table declares
    # (a table may declare variants, such as one per agreement threshold).
    parse: Callable[[ManifestTable], Sequence[LabelSetFields]]
    # Arrays and meta, from the bundle's files read through the typed reader.
    build: Callable[[BundleFiles, LabelSetDef], Built]
    # The record (headline `accuracy, correct, total, ci_low, ci_high` and the family's own
    # figures) and the top-1 pairs no human judged (None where the family has no judgements).
    score: Callable[[CompiledLabelSet, Predictions, ScoreInputs], tuple[Record, NovelPairs | None]]
    # Whether each evaluated example counts as correct in the headline, in evaluated order:
    # `hits.sum() == record["correct"]`; the paired tests between submissions compare these.
    headline_hits: Callable[[CompiledLabelSet, Predictions], np.ndarray]
    # The headline's name in a table ("top-1") and on the submission page.
    headline: str
    headline_label: str
    about: AboutText
    interval: str = CLOPPER_PEARSON
    # The manifest's `layout` that picks this family among those of its `bundle_kind`.
    layout: str | None = None
    # One label per example on every example: a hidden one may be split in a public and a
    # private part (docs/bundles.md §5.7).
    splittable: bool = False
    figures: tuple[Figure, ...] = ()
    facts: Callable[[Mapping[str, Any]], list[Fact]] = _no_facts
    about_values: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, str]] = _no_values
    # The labels every other label set of the example set is compared with (rank shifts).
    reference: bool = False
    # Drawn against the original labels in the label-set scatter (its order there).
    plot_order: int | None = None
    # The headline reads "correct of total" first, its accuracy second.
    headline_as_count: bool = False
    # The mistake-gallery section of a submission on it: "misses" (the record's `misses`,
    # listed examples it got wrong) or "correctable" (every example of the correctable set).
    gallery: str | None = None
    # The record carries `gap`: original accuracy minus this one (set by the scorer).
    gap_to_reference: bool = False
    # Novel-prediction review (docs/metrics.md §11): a settled panel's verdicts make the next
    # version; None where the family's labels are not reviewed this way.
    apply_verdicts: Callable[[CompiledLabelSet, Sequence[Any]], CompiledLabelSet] | None = None
    # Only annotated examples can take a verdict (the others were never shown to experts).
    verdicts_need_annotation: bool = False
    # Ground-truth review (Northcutt et al.): settled votes make the next version.
    apply_ground_truth: Callable[[CompiledLabelSet, Sequence[Any]], CompiledLabelSet] | None = None
    # A version written back in its source file's layout (label export); the second argument
    # is the current set of the family named `export_with`, or None.
    export: Callable[[CompiledLabelSet, CompiledLabelSet | None, Sequence[str]], Any] | None = None
    export_with: str | None = None
    # A submission's record and headline hits on a version that review decisions made from
    # its parent (which differs only in how some pairs are judged), from those on the parent
    # and its top-k at the changed examples: exactly what scoring its stored file gives. None:
    # such a version is scored from the stored files.
    revised_record: Callable[[CompiledLabelSet, CompiledLabelSet, Record, np.ndarray,
                              np.ndarray, np.ndarray], tuple[Record, np.ndarray]] | None = None
    # Arrays an older builder did not write and `upgrade` can add from the original labels.
    upgrade: Callable[[CompiledLabelSet, np.ndarray], CompiledLabelSet] | None = None

    @property
    def reviewable(self) -> bool:
        return self.apply_verdicts is not None

    def about_how(self, summary: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
        """The 'How it was built' paragraphs with a version's numbers filled in."""
        values = self.about_values(summary, params)
        return [paragraph.format(**values) if values else paragraph
                for paragraph in self.about.how]
