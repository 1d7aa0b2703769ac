"""Notifications receive what the domains below them tell (their signals, sent after their
commits): a review decision (leaderboard/review/signals.py), a request to host made or
decided (leaderboard/catalog/teams/signals.py), a request to join a benchmark and its decision
(leaderboard/submissions/participation/signals.py)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from leaderboard.catalog.teams.signals import host_request_created, host_request_decided
from leaderboard.notifications.services import (
    host_request_created_notify,
    host_request_decided_notify,
    participation_decision_notify,
    participation_request_notify,
    review_decision_notify,
)
from leaderboard.review.signals import review_item_decided
from leaderboard.submissions.participation.signals import (
    participation_decided,
    participation_requested,
)


@receiver(review_item_decided, dispatch_uid="notifications-review-decided")
def _review_item_decided(sender: Any, *, item_id: int, **kwargs: Any) -> None:
    review_decision_notify(item_id=item_id)


@receiver(host_request_created, dispatch_uid="notifications-host-request-created")
def _host_request_created(sender: Any, *, request_id: int, **kwargs: Any) -> None:
    host_request_created_notify(request_id=request_id)


@receiver(host_request_decided, dispatch_uid="notifications-host-request-decided")
def _host_request_decided(sender: Any, *, request_id: int, **kwargs: Any) -> None:
    host_request_decided_notify(request_id=request_id)


@receiver(participation_requested, dispatch_uid="notifications-participation-requested")
def _participation_requested(sender: Any, *, request_id: int, **kwargs: Any) -> None:
    participation_request_notify(request_id=request_id)


@receiver(participation_decided, dispatch_uid="notifications-participation-decided")
def _participation_decided(sender: Any, *, request_id: int, **kwargs: Any) -> None:
    participation_decision_notify(request_id=request_id)
