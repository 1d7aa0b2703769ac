"""What both reviews' API views share (the novel-prediction queue, leaderboard/review/api.py,
and ground truth, leaderboard/review/ground_truth/api.py; audits too): who may review, the
benchmark a URL names, and the answer to a vote."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard.catalog.access import Action, benchmark_check, benchmark_get_for
from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.teams.permissions import user_is_maintainer
from leaderboard.review.panel.services import Panel


class IsMaintainer(BasePermission):
    """Members of some host team (or superusers); others get 403 `permission_denied`. Which
    benchmarks they review is their teams' (benchmark_or_404, benchmark_reviewable_or_404)."""

    message = "only the members of a host team may review (docs/hosts/teams.md)"

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not isinstance(user, User) or not user_is_maintainer(user=user):
            raise PermissionDenied(self.message)
        return True


REVIEWER_PERMISSIONS = [IsAuthenticated, IsMaintainer]


def benchmark_or_404(request: Request, slug: str, action: Action = Action.REVIEW) -> Benchmark:
    """The benchmark, if the caller may `action` it (review: its team's reviewers): 404 when
    they may not see it, 403 `permission_denied` when they see it but are not of its team."""
    try:
        return benchmark_get_for(user=request.user, slug=slug, action=action)
    except Benchmark.DoesNotExist:
        raise NotFound(f"no benchmark {slug!r}") from None


def benchmark_reviewable_or_404(request: Request, benchmark: Benchmark, what: str) -> None:
    """An item of `benchmark` (`what`: how a 404 names it) for its team's reviewers only."""
    try:
        benchmark_check(user=request.user, benchmark=benchmark, action=Action.REVIEW)
    except Benchmark.DoesNotExist:
        raise NotFound(f"no {what}") from None


def panel_item_reviewable_or_404(request: Request, model: Any, item_id: int, what: str) -> None:
    """Before a vote's input is read: the item exists for the caller (404 otherwise) and its
    benchmark is their team's (403 `permission_denied`), so a refusal never depends on the
    body (the vote's service checks both again, under the item's lock)."""
    item = model.objects.select_related("label_set__benchmark__team").filter(id=item_id).first()
    if item is None:
        raise NotFound(f"no {what} {item_id}")
    benchmark_reviewable_or_404(request, item.label_set.benchmark, f"{what} {item_id}")


def panel_vote_response(output: type[serializers.Serializer], item: Any,
                        panel: Panel) -> Response:
    """201 with the item after a vote (either review: the panel in services.py), with how many
    votes it has and how many its panel needs."""
    item.vote_count = item.votes.count()
    item.panel_size = panel.panel_size(item.label_set.benchmark)
    return Response(output(item).data, status=status.HTTP_201_CREATED)
