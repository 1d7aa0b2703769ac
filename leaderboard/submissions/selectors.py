"""Reads. Views, the API and services read the database through these functions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, Min, Prefetch, Q, QuerySet

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_list_with_role
from leaderboard.catalog.teams.permissions import HOSTING_ROLES, REVIEWING_ROLES
from leaderboard.submissions.models import Score, Submission


def submission_visible_get(*, submission_id: int, user: Any) -> Submission:
    """A submission the user may see: public (on a benchmark they see), their own, or any of a
    benchmark whose team they host for (docs/hosts/teams.md).

    Raises Submission.DoesNotExist otherwise, so a private submission's existence is not
    revealed."""
    rows = Submission.objects.select_related("benchmark", "owner")
    visible = Q(public=True, status=Submission.Status.SCORED) & (
        Q(benchmark__hidden=False)
        | Q(benchmark__in=benchmark_list_with_role(user=user, roles=REVIEWING_ROLES)))
    if user.is_authenticated:
        visible |= Q(owner=user)
        visible |= Q(benchmark__in=benchmark_list_with_role(user=user, roles=HOSTING_ROLES))
    return rows.filter(visible).get(id=submission_id)


def submission_list_for_owner(*, owner: Any) -> QuerySet[Submission]:
    scores = Score.objects.select_related("label_set", "label_set_version")
    return (Submission.objects.filter(owner=owner).select_related("benchmark")
            .prefetch_related(Prefetch("scores", queryset=scores))
            .order_by("-created", "-id"))


def submission_latest_benchmark(*, owner: Any) -> Benchmark | None:
    """The benchmark of the owner's newest submission on a benchmark not hidden, if any."""
    latest = (Submission.objects.filter(owner=owner, benchmark__hidden=False)
              .select_related("benchmark").order_by("-created", "-id").first())
    return latest.benchmark if latest is not None else None


def submission_scores(*, submission: Submission) -> dict[str, Score]:
    """The submission's score on the newest published version of each label set it was scored
    on (a score on a version still being re-scored waits, as on the boards)."""
    out: dict[str, Score] = {}
    rows = (Score.objects.filter(submission=submission,
                                 label_set_version__published__isnull=False)
            .select_related("label_set", "label_set_version")
            .order_by("label_set_id", "-label_set_version__number"))
    for score in rows:
        out.setdefault(score.label_set.slug, score)
    return out


def submission_status_counts() -> dict[str, int]:
    """How many submissions are in each status, every status named (0 when none): what
    /metrics reports (evalserver/metrics_endpoint.py)."""
    counts = dict.fromkeys(Submission.Status.values, 0)
    counts.update(Submission.objects.order_by().values_list("status").annotate(n=Count("id")))
    return counts


def submission_oldest_waits(*, now: datetime) -> dict[str, float]:
    """Seconds the longest-waiting queued submission has waited since it was (last) queued,
    and the longest-running one has run since its attempt began; 0 when there is none (a
    stuck job shows as one that only grows: docs/operations-metrics.md)."""
    oldest = Submission.objects.aggregate(
        queued=Min("queued_at", filter=Q(status=Submission.Status.QUEUED)),
        running=Min("started", filter=Q(status=Submission.Status.RUNNING)))
    return {status: max((now - since).total_seconds(), 0.0) if since else 0.0
            for status, since in oldest.items()}
