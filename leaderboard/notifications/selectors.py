"""Reads of notifications: a user's preferences, webhook endpoints and delivery log."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from leaderboard.catalog.teams.permissions import (
    host_requests_user_can_decide,
    user_is_maintainer,
)
from leaderboard.notifications.models import (
    Event,
    NotificationDelivery,
    NotificationPreference,
    WebhookEndpoint,
)

# The events a user may opt into (a test event is sent on demand only).
EVENTS = tuple(event for event in Event if event != Event.TEST)
# Sent to maintainers only (docs/api.md §10): not offered to anyone else.
MAINTAINER_EVENTS = frozenset({Event.REVIEW_QUEUE_GREW})
# Sent to those who decide requests to host (site admins, superusers) only.
SITE_ADMIN_EVENTS = frozenset({Event.HOST_REQUEST_CREATED})


def notification_events_offered(*, user: User) -> tuple[Event, ...]:
    """The events this user's opt-in table offers: a maintainers' event to the members of a
    host team (docs/hosts/teams.md), the site admins' to site admins."""
    maintainer = user_is_maintainer(user=user)
    site_admin = host_requests_user_can_decide(user=user)
    return tuple(event for event in EVENTS
                 if (maintainer or event not in MAINTAINER_EVENTS)
                 and (site_admin or event not in SITE_ADMIN_EVENTS))


def notification_preferences_get(*, user: User) -> dict[str, dict[str, bool]]:
    """Every event with its channels, off where the user never opted in."""
    rows = {row.event: row for row in NotificationPreference.objects.filter(user=user)}
    return {event.value: {"email": bool(rows.get(event) and rows[event].email),
                          "webhook": bool(rows.get(event) and rows[event].webhook)}
            for event in EVENTS}


def notification_subscribers_list(*, event: str, user_ids: list[int] | None = None
                                  ) -> QuerySet[NotificationPreference]:
    """The opted-in preferences of an event (of these users only, when given)."""
    rows = NotificationPreference.objects.filter(event=event).filter(Q(email=True) |
                                                                     Q(webhook=True))
    return rows if user_ids is None else rows.filter(user_id__in=user_ids)


def webhook_endpoints_list(*, user: User | int,
                           benchmark_id: int | None = None,
                           for_event: bool = False) -> QuerySet[WebhookEndpoint]:
    """A user's endpoints; `for_event`: those that take an event of `benchmark_id` (theirs
    and the ones of no benchmark)."""
    rows = WebhookEndpoint.objects.filter(user=user).select_related("benchmark").order_by("pk")
    if for_event:
        rows = rows.filter(Q(benchmark__isnull=True) | Q(benchmark_id=benchmark_id))
    return rows


def notification_deliveries_list(*, user: User, limit: int = 50
                                 ) -> list[NotificationDelivery]:
    """The user's latest deliveries, newest first, each with its tries."""
    return list(NotificationDelivery.objects.filter(user=user).select_related("endpoint")
                .prefetch_related("tries").order_by("-created", "-pk")[:limit])
