"""Notifications receive what the domains below them tell (their signals, sent after their
commits): a review decision (leaderboard/review/signals.py)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from leaderboard.notifications.services import review_decision_notify
from leaderboard.review.signals import review_item_decided


@receiver(review_item_decided, dispatch_uid="notifications-review-decided")
def _review_item_decided(sender: Any, *, item_id: int, **kwargs: Any) -> None:
    review_decision_notify(item_id=item_id)
