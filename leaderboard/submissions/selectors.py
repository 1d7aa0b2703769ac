"""Reads. Views, the API and services read the database through these functions."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, Q, QuerySet

from leaderboard.submissions.models import Score, Submission


def submission_visible_get(*, submission_id: int, user: Any) -> Submission:
    """A submission the user may see: public, their own, or any for staff.

    Raises Submission.DoesNotExist otherwise, so a private submission's existence is not
    revealed."""
    rows = Submission.objects.select_related("benchmark", "owner")
    if not (user.is_authenticated and user.is_staff):
        visible = Q(public=True, status=Submission.Status.SCORED)
        if user.is_authenticated:
            visible |= Q(owner=user)
        rows = rows.filter(visible)
    return rows.get(id=submission_id)


def submission_list_for_owner(*, owner: Any) -> QuerySet[Submission]:
    scores = Score.objects.select_related("label_set", "label_set_version")
    return (Submission.objects.filter(owner=owner).select_related("benchmark")
            .prefetch_related(Prefetch("scores", queryset=scores))
            .order_by("-created", "-id"))


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
