"""Reads of label audits: the list, one audit's report (figures, histogram, flagged examples
with their ground-truth candidates) and the submissions an audit may use."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet

from leaderboard.audits.models import Audit
from leaderboard.catalog.example_images import example_image_drawer
from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import (
    benchmark_class_names,
    benchmark_list_with_role,
    example_namer,
)
from leaderboard.catalog.teams.permissions import HOSTING_ROLES
from leaderboard.review.ground_truth.models import GroundTruthCandidate
from leaderboard.submissions.models import Submission

REPORT_FLAGS = 50
# Evidence entries shown as figures next to a flagged example (the rest stays in the JSON).
EVIDENCE_FIGURES: dict[str, tuple[tuple[str, str], ...]] = {
    Audit.Kind.AUL: (("aul", "AUL"), ("noisy_probability", "P(noisy)"),
                     ("first_epoch_loss", "first-epoch loss"),
                     ("last_epoch_loss", "last-epoch loss")),
    Audit.Kind.CONFIDENT_LEARNING: (("self_confidence", "P(given)"),
                                    ("suggested_probability", "P(suggested)")),
}


def audit_list(*, user: Any) -> QuerySet[Audit]:
    """The audits of the benchmarks the user reviews (docs/hosts/teams.md), newest first, with
    what the list shows."""
    return (Audit.objects.filter(benchmark__in=benchmark_list_with_role(user=user))
            .select_related("benchmark", "example_set", "created_by")
            .annotate(submission_count=Count("submissions")).order_by("-created", "-id"))


def audit_get(*, audit_id: int, user: Any = None) -> Audit:
    """One audit; raises Audit.DoesNotExist, also, when `user` is given, for one of a
    benchmark they do not review (its existence is its team's business)."""
    audits = Audit.objects.all()
    if user is not None:
        audits = audits.filter(benchmark__in=benchmark_list_with_role(user=user))
    return (audits.select_related("benchmark", "example_set", "label_set", "created_by")
            .get(id=audit_id))


def audit_submission_choices(*, user: Any, per_benchmark: int = 100
                             ) -> list[tuple[Benchmark, list[Submission]]]:
    """The newest scored submissions of each benchmark the user hosts (what confident learning
    averages)."""
    out = []
    for benchmark in benchmark_list_with_role(user=user, roles=HOSTING_ROLES).order_by("slug"):
        scored = list(Submission.objects.filter(benchmark=benchmark,
                                                status=Submission.Status.SCORED)
                      .select_related("owner").order_by("-created", "-id")[:per_benchmark])
        if scored:
            out.append((benchmark, scored))
    return out


def audit_summary(audit: Audit) -> dict[str, Any]:
    """The headline figures of a finished audit, the same for both kinds (None until done).

    noise_rate: AUL, the high-loss component's weight; confident learning, cleanlab's
    estimated number of issues over the examples."""
    result = audit.result or {}
    histogram = result.get("histogram") if audit.kind == Audit.Kind.AUL else None
    return {
        "noise_rate": result.get("noise_rate"),
        "num_examples": result.get("num_examples"),
        "num_flagged": result.get("num_flagged"),
        "flagged_fraction": (result["num_flagged"] / result["num_examples"]
                             if result.get("num_examples") else None),
        "validation": result.get("validation"),
        "mixture": result.get("mixture"),
        "histogram": histogram,
        "progress": result.get("progress"),
        "candidates_created": audit.candidates_created,
    }


@dataclass(frozen=True)
class FlagRow:
    """One flagged example as the report shows it."""

    rank: int
    index: int
    file_name: str
    image: str | None
    given: int
    given_name: str
    suggested: int
    suggested_name: str
    figures: list[tuple[str, float]]
    evidence: dict[str, Any]
    evidence_text: str  # the whole evidence entry as indented JSON
    candidate: GroundTruthCandidate | None
    in_review: bool  # the candidate is open: the ground-truth review page can show it


def audit_flag_rows(audit: Audit, *, limit: int = REPORT_FLAGS) -> list[FlagRow]:
    """The first `limit` flagged examples, most likely errors first."""
    evidence = (audit.result or {}).get("evidence") or []
    entries = evidence[:limit]
    if not entries:
        return []
    names = benchmark_class_names(benchmark=audit.benchmark)
    example_name = example_namer(example_set=audit.example_set)
    candidates = {c.example_index: c for c in GroundTruthCandidate.objects.filter(
        label_set=audit.label_set, source=f"audit:{audit.pk}",
        example_index__in=[e["index"] for e in entries])}
    draw = example_image_drawer(audit.example_set.slug)
    rows = []
    for entry in entries:
        index, given, suggested = entry["index"], entry["given_label"], entry["suggested_label"]
        candidate = candidates.get(index)
        rows.append(FlagRow(
            rank=entry["rank"], index=index, file_name=example_name(index),
            image=draw(index), given=given, given_name=names[given],
            suggested=suggested, suggested_name=names[suggested],
            figures=[(label, float(entry[key])) for key, label in
                     EVIDENCE_FIGURES.get(audit.kind, ()) if entry.get(key) is not None],
            evidence=entry, evidence_text=json.dumps(entry, indent=1), candidate=candidate,
            in_review=candidate is not None
            and candidate.status == GroundTruthCandidate.Status.OPEN))
    return rows
