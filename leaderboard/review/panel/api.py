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

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.common.roles import user_is_reviewer
from leaderboard.review.panel.services import Panel


class IsReviewer(BasePermission):
    """Maintainers (staff or the `reviewers` group); others get 403 `permission_denied`."""

    message = "only maintainers (staff or the reviewers group) may review"

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not isinstance(user, User) or not user_is_reviewer(user):
            raise PermissionDenied(self.message)
        return True


REVIEWER_PERMISSIONS = [IsAuthenticated, IsReviewer]


def benchmark_or_404(slug: str) -> Benchmark:
    try:
        return benchmark_get(slug=slug)
    except Benchmark.DoesNotExist:
        raise NotFound(f"no benchmark {slug!r}") from None


def panel_vote_response(output: type[serializers.Serializer], item: Any,
                        panel: Panel) -> Response:
    """201 with the item after a vote (either review: the panel in services.py), with how many
    votes it has and how many its panel needs."""
    item.vote_count = item.votes.count()
    item.panel_size = panel.panel_size(item.label_set.benchmark)
    return Response(output(item).data, status=status.HTTP_201_CREATED)
