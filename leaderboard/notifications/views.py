"""The notifications section of the user's page (leaderboard/accounts/views.py `profile`):
opt in to events per channel, add a webhook endpoint, for every benchmark or one (its secret
shown once, in the page that follows), remove one, send a test event."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from leaderboard.common.errors import ServiceError
from leaderboard.notifications.selectors import notification_events_offered
from leaderboard.notifications.services import (
    notification_preference_update,
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_test_event_send,
)


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required
    return user


@login_required
@require_POST
def webhook_add(request: HttpRequest) -> HttpResponse:
    try:
        endpoint, secret = webhook_endpoint_create(
            user=_user(request), url=request.POST.get("url", "").strip(),
            benchmark_slug=request.POST.get("benchmark", "").strip())
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Webhook {endpoint.url} added. Its signing secret, shown "
                                  f"this once: {secret}")
    return redirect("/profile/#notifications")


@login_required
@require_POST
def webhook_remove(request: HttpRequest, webhook_id: int) -> HttpResponse:
    try:
        webhook_endpoint_delete(user=_user(request), endpoint_id=webhook_id)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Webhook removed: nothing more is sent to it.")
    return redirect("/profile/#notifications")


@login_required
@require_POST
def webhook_test(request: HttpRequest) -> HttpResponse:
    try:
        ids = webhook_test_event_send(user=_user(request))
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Test event queued to {len(ids)} endpoint(s); its tries "
                                  "appear in the log below.")
    return redirect("/profile/#notifications")


@login_required
@require_POST
def notification_preferences_save(request: HttpRequest) -> HttpResponse:
    """The page's opt-in table: one checkbox per event and channel, named
    `<event>:email` / `<event>:webhook`; an unticked box opts out."""
    user = _user(request)
    for event in notification_events_offered(user=user):
        notification_preference_update(
            user=user, event=event.value, email=f"{event.value}:email" in request.POST,
            webhook=f"{event.value}:webhook" in request.POST)
    messages.success(request, "Notification choices saved.")
    return redirect("/profile/#notifications")
