"""Original labels corrected where human reviewers agreed they were wrong, examples whose right
label is unclear pruned out (Northcutt et al. 2021; docs/metrics.md §3). Bundle kind
`validated`: the original labels plus a vote file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import revisions
from ..datasets import MturkRecord
from ..hits import NovelPairs, Record, hits_record, topk_record
from ..label_set_builders import CompiledLabelSet, build_corrected
from ..predictions import Predictions
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
    Refuse,
)
from .vote_files import VOTE_IDS, VOTE_LABELS, VOTE_MEANINGS, VoteFileDef

NORTHCUTT2021 = Citation(
    "northcutt2021", ("Northcutt, Curtis G.", "Athalye, Anish", "Mueller, Jonas"),
    "Pervasive Label Errors in Test Sets Destabilize Machine Learning Benchmarks",
    "NeurIPS Datasets and Benchmarks Track", 2021, "https://arxiv.org/abs/2103.14749")


# docs/metrics.md §9: the two noise-prevalence curves a record's `noise_prevalence` gives, by
# the name the charts and the API give each (the labeling) and the key of its accuracy on C,
# the corrected labels' first.
NOISE_CURVES = (("corrected", "acc_c_corrected"), ("original", "acc_c_original"))
# Which of the two labels a prediction matches on C (the mistake gallery's filter; a
# prediction matching both is not in C): the record's Acc@1 and cAcc@1 count the first two.
C_MATCHES = ("original", "corrected", "neither")

# docs/metrics.md §3.1: agreement thresholds of five votes; non-errors need 3 for any of them.
THRESHOLDS = (3, 4, 5)


@dataclass(frozen=True)
class ValidatedFields(LabelSetFields):
    """The original labels it corrects, the vote file of the human validation, and the
    agreement threshold (docs/bundles.md §5.2; one label set per threshold declared)."""

    original: str
    votes: VoteFileDef
    threshold: int
    first: bool = True  # the first threshold declared keeps the slug

    def references(self) -> tuple[Reference, ...]:
        return (Reference("original", self.original, "original", "a label set of kind 'single'",
                          same_example_set=True),)

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        files = layout.files_of(self.original)
        names_file = layout.names_file(example_set)
        if self.votes.ids == "name" and names_file and names_file not in files:
            files += (names_file,)
        if self.votes.labels == "name" and layout.classes_file:
            files += (layout.classes_file,)
        return files + (self.votes.file,)

    def check(self, layout: BundleLayout, example_set: str, refuse: Refuse) -> None:
        needs = {"number": ("pattern",), "name": ("pattern", "file")}.get(self.votes.ids)
        naming = layout.example_naming(example_set)
        if needs and naming not in needs:
            raise refuse("votes.ids", f"ids {self.votes.ids!r} need an example set named by "
                         f"{' or '.join(needs)}, not {naming!r}", "bad_value")

    def params(self) -> dict[str, object]:
        # the answers its workers had and what each means, which the about page states
        return {"threshold": self.threshold,
                "answers": [[key, meaning] for key, meaning in self.votes.vocabulary]}

    @property
    def slug_suffix(self) -> str:
        return "" if self.first else f"t{self.threshold}"

    def named(self, text: str) -> str:
        return text.replace("{threshold}", str(self.threshold))


def _parse(table: ManifestTable) -> list[ValidatedFields]:
    """A `validated` table: one label set per threshold; the first keeps the slug, the others
    get `<slug>-t<threshold>` (ImageNet's `corrected-t4`), `{threshold}` in the name and
    description replaced by each one's."""
    original = table.slug("original", "original")
    thresholds = table.int_list("thresholds", (3,))
    if not thresholds:
        raise table.error("bad_value", "thresholds", "declare at least one threshold")
    for threshold in thresholds:
        if threshold not in THRESHOLDS:
            raise table.error(
                "bad_value", "thresholds", f"a threshold is 3, 4 or 5 of 5 votes, got {threshold}"
            )
    if len(set(thresholds)) != len(thresholds):
        raise table.error("bad_value", "thresholds", "a threshold is declared twice")
    votes = _vote_file(table.table("votes"))
    return [ValidatedFields(original=original, votes=votes, threshold=threshold, first=i == 0)
            for i, threshold in enumerate(thresholds)]


def _vote_file(table: ManifestTable) -> VoteFileDef:
    fields: dict[str, Any] = {
        "file": table.path("file"),
        "ids": table.choice("ids", VOTE_IDS, "index"),
        "labels": table.choice("labels", VOTE_LABELS, "id"),
    }
    if fields["ids"] == "name":
        fields["id_prefix"] = table.string("id_prefix", "")
        fields["id_suffix"] = table.string("id_suffix", "")
    for key in ("id_field", "given_field", "guessed_field", "votes_field"):
        if table.has(key):
            fields[key] = table.string(key)
    vocabulary = table.table("vocabulary")
    pairs = []
    for key in vocabulary.data:
        pairs.append((key, vocabulary.choice(key, VOTE_MEANINGS)))
    vocabulary.done()
    meanings = {meaning for _, meaning in pairs}
    for needed in ("original", "guessed"):
        if needed not in meanings:
            raise vocabulary.error(
                "bad_value", "", f"no vote key means {needed!r}: the categories need one"
            )
    table.done()
    return VoteFileDef(vocabulary=tuple(pairs), **fields)


def vote_records(files: BundleFiles, ls: LabelSetDef) -> list[MturkRecord]:
    """The vote records of a validated label set, examples as 0-based indices and labels as
    class ids (the same for every threshold declared)."""
    fields = ls.fields
    assert isinstance(fields, ValidatedFields)
    return files.vote_records(fields.votes, example_set=ls.example_set,
                              original=files.labels_of(fields.original),
                              field=f"label_sets.{ls.slug}.votes")


def _build(files: BundleFiles, ls: LabelSetDef) -> Built:
    fields = ls.fields
    assert isinstance(fields, ValidatedFields)
    return build_corrected(files.labels_of(fields.original), vote_records(files, ls),
                           fields.threshold)


def _score(ls: CompiledLabelSet, preds: Predictions,
           inputs: ScoreInputs) -> tuple[Record, NovelPairs | None]:
    """Corrected accuracy over the pruned set P; Acc@1 and cAcc@1 on the correctable C."""
    a = ls.arrays
    pruned, correctable = a["pruned"], a["correctable"]
    top1 = preds.topk[:, 0]
    hit_corrected = top1 == a["corrected_labels"]
    hit_original = top1 == a["labels"]
    record = hits_record(hit_corrected, pruned)
    record["top5"] = topk_record(preds.topk, a["corrected_labels"], pruned)
    rest = pruned & ~correctable  # B = P minus C, where corrected == original
    acc1 = hits_record(hit_original, correctable)
    cacc1 = hits_record(hit_corrected, correctable)
    acc_b = hits_record(hit_original, rest)
    record["correctable"] = {"acc1": acc1, "cacc1": cacc1}
    record["noise_prevalence"] = {
        "n_c": acc1["total"],
        "n_b": acc_b["total"],
        "acc_c_original": acc1["accuracy"],
        "acc_c_corrected": cacc1["accuracy"],
        "acc_b": acc_b["accuracy"],
    }
    record["original_on_pruned"] = hits_record(hit_original, pruned)
    return record, None


def _hits(ls: CompiledLabelSet, preds: Predictions) -> np.ndarray:
    """The pruned set P, as the record counts it."""
    a = ls.arrays
    return np.asarray((preds.topk[:, 0] == a["corrected_labels"])[a["pruned"]])


def _facts(summary: Mapping[str, Any]) -> list[Fact]:
    counts = summary.get("counts") if isinstance(summary.get("counts"), dict) else {}
    assert isinstance(counts, dict)
    unknown = sum(int(counts.get(k, 0)) for k in ("multi_label", "neither", "non_agreement"))
    return facts_from([
        ("flagged", "Flagged and checked by 5 workers", summary_int(summary, "flagged")),
        ("non_error", "Non-errors (at least 3 kept the given label)",
         summary_int(counts, "non_error")),
        ("correctable", "Correctable set C (guessed label takes over)",
         summary_int(summary, "correctable_size")),
        ("multi_label", "Multi-label (removed)", summary_int(counts, "multi_label")),
        ("neither", "Neither (removed)", summary_int(counts, "neither")),
        ("non_agreement", "Non-agreement (removed)", summary_int(counts, "non_agreement")),
        ("unknown", "Unknown set U = multi-label + neither + non-agreement",
         unknown if counts else None),
        ("pruned", "Pruned set P = all examples minus U", summary_int(summary, "pruned_size")),
    ])


# What a vote for each meaning of a vote vocabulary says (docs/bundles.md §5.2).
_ANSWERS = {"original": "the given label", "guessed": "the label the algorithm guessed",
            "both": "both", "neither": "neither"}


def vote_answers_text(answers: Any) -> str:
    """The answers the workers had, from a validated label set's vocabulary ([[key, meaning],
    ...]: IMDB's neutral and off-topic name no label); the study's four without one."""
    if not isinstance(answers, list) or not answers:
        answers = [["given", "original"], ["guessed", "guessed"], ["both", "both"],
                   ["neither", "neither"]]
    said = [_ANSWERS[meaning] for _, meaning in answers if meaning in _ANSWERS]
    unlabelled = [str(key) for key, meaning in answers if meaning == "none"]
    if unlabelled:
        said.append(f"an answer that names no label ({', '.join(unlabelled)})")
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])}, or {said[-1]}"


def _about_values(summary: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, str]:
    threshold = summary.get("threshold", params.get("threshold"))
    return {"threshold": str(int(threshold)) if isinstance(threshold, int | float) else "t",
            "answers": vote_answers_text(params.get("answers"))}


FAMILY = Family(
    name="corrected",
    title="Corrected labels",
    bundle_kind="validated",
    label_kind="single",
    arrays=("labels", "corrected_labels", "pruned", "correctable"),
    parse=_parse,
    build=_build,
    score=_score,
    headline_hits=_hits,
    headline="top-1",
    headline_label="Top-1 accuracy on corrected labels (pruned set)",
    figures=(
        Figure("Top-5 accuracy", ("top5",)),
        Figure("Correctable set: Acc@1 (original labels)", ("correctable", "acc1")),
        Figure("Correctable set: cAcc@1 (corrected labels)", ("correctable", "cacc1")),
        Figure("Original labels on the same pruned set", ("original_on_pruned",)),
    ),
    facts=_facts,
    about_values=_about_values,
    plot_order=0,
    gallery="correctable",
    apply_ground_truth=revisions.apply_ground_truth,
    about=AboutText(
        "The original labels, corrected where human reviewers agreed the label was wrong; "
        "examples whose right label is unclear are left out.",
        ("Confident learning flagged the test examples whose original label was most likely "
         "wrong. Five Mechanical Turk workers checked each flagged example and answered whether "
         "it shows {answers}.",
         "With an agreement threshold of {threshold} of 5 votes, each flagged example is a "
         "non-error if at least 3 workers kept the given label; otherwise correctable if at "
         "least {threshold} chose the guessed label; else multi-label if at least {threshold} "
         "answered both; else neither if at least {threshold} answered neither; else "
         "non-agreement. A missing answer counts as 0.",
         "Correctable examples (the set C) take the guessed label; every other example keeps its "
         "original label. The multi-label, neither and non-agreement examples form the unknown "
         "set U and are removed: accuracy is computed over the pruned set P, all examples minus U.",
         "On C alone each submission page also shows accuracy against the original labels "
         "(Acc@1) and against the corrected ones (cAcc@1); the mistake gallery shows every "
         "example of C. Later versions add the answers of this server's ground-truth review "
         "panel, by the same rules."),
        (NORTHCUTT2021,)),
)
