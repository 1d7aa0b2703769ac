"""The profile page with the user's API token; /client/, where the command-line client that
uses the token is installed from. Sign-up, log in and out, email verification, password reset
and two-factor authentication are django-allauth's, under /accounts/ (evalserver/urls.py); its
login is held to the failed-login limits (`AccountLoginView`), and so is the admin's
(`admin_login`). /signup/, /login/ and /logout/ stay, for old links and bookmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from allauth.account import views as allauth_views
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from leaderboard.accounts import services as token_services
from leaderboard.accounts.client_wheels import client_wheel_named, client_wheels
from leaderboard.accounts.selectors import token_get
from leaderboard.catalog.selectors import benchmark_visible_list
from leaderboard.notifications.selectors import (
    notification_deliveries_list,
    notification_events_offered,
    notification_preferences_get,
    webhook_endpoints_list,
)
from leaderboard.submissions.selectors import submission_latest_benchmark


def to_allauth(url_name: str) -> Any:
    """The old page's address (/login/, /signup/) sends to allauth's page, its query (`next`)
    kept."""

    @require_safe
    def view(request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        return redirect(reverse(url_name) + (f"?{query}" if query else ""))

    return view


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required
    return user


def _notification_choices(user: User) -> list[dict[str, object]]:
    """The opt-in table's rows: each event, its label and both channels' state."""
    chosen = notification_preferences_get(user=user)
    return [{"event": event.value, "label": event.label, **chosen[event.value]}
            for event in notification_events_offered(user=user)]


def _client_submit(request: HttpRequest, user: User) -> dict[str, str]:
    """The profile's command line: with this server's own URL (without it the client goes to
    http://127.0.0.1:8000, and would hand the token to whatever answers there) and the
    benchmark in hand: that of the user's newest submission, else the first listed."""
    benchmark = (submission_latest_benchmark(owner=user)
                 or benchmark_visible_list().only("slug", "main_example_set").first())
    slug, example_set = ((benchmark.slug, benchmark.main_example_set) if benchmark is not None
                         else ("BENCHMARK", "EXAMPLE_SET"))
    return {"url": request.build_absolute_uri("/").rstrip("/"),
            "command": f"evalserver-client submit --benchmark {slug} --model NAME "
                       f"{example_set}=preds.npy"}


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    return render(request, "leaderboard/profile.html", {
        "token": token_get(user=user), "client_submit": _client_submit(request, user),
        "webhooks": webhook_endpoints_list(user=user),
        "deliveries": notification_deliveries_list(user=user, limit=20),
        "notification_choices": _notification_choices(user),
        "webhook_benchmarks": benchmark_visible_list()})


@login_required
@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    # One key per user (docs/api.md §2): creating when one exists keeps it.
    _, created = token_services.token_get_or_create(user=_user(request))
    messages.success(request, "API token created." if created else "You already have a token.")
    return redirect("profile")


@login_required
@require_POST
def token_revoke(request: HttpRequest) -> HttpResponse:
    revoked = token_services.token_revoke(user=_user(request))
    messages.success(request, "API token revoked: requests with it are refused from now on."
                     if revoked else "You had no token.")
    return redirect("profile")


@require_safe
def client_download(request: HttpRequest) -> HttpResponse:
    """How to install the client from this server (its newest wheel, built by the server's
    set-up: docs/operators/one-machine.md, "The client's wheel") and its first commands."""
    wheels = client_wheels(folder=Path(settings.EVALSERVER_CLIENT_WHEEL_DIR))
    wheel = wheels[0] if wheels else None
    benchmark = benchmark_visible_list().only("slug", "main_example_set").first()
    return render(request, "leaderboard/client.html", {
        "wheel": wheel, "server": request.build_absolute_uri("/").rstrip("/"),
        "wheel_url": wheel and request.build_absolute_uri(
            reverse("client_wheel", args=[wheel.name])),
        "benchmark": benchmark.slug if benchmark else "BENCHMARK",
        "example_set": benchmark.main_example_set if benchmark else "EXAMPLE_SET"})


@require_safe
def client_wheel(request: HttpRequest, name: str) -> FileResponse:
    """One of the client's wheels, by its file name (nothing else of the folder is served)."""
    wheel = client_wheel_named(folder=Path(settings.EVALSERVER_CLIENT_WHEEL_DIR), name=name)
    if wheel is None:
        raise Http404("no such wheel")
    return FileResponse(wheel.path.open("rb"), as_attachment=True, filename=wheel.name,
                        content_type="application/octet-stream")


class AccountLoginView(allauth_views.LoginView):
    """allauth's login page, held to the same failed-login limits as the API's token endpoint
    (`AccountLoginForm`, leaderboard/accounts/login_throttle.py): past them it answers 429
    with `Retry-After`."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return _throttled_answer(super().post(request, *args, **kwargs))


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login page (Django's `admin.site.login`, with `AdminLoginForm` as its
    `login_form`: leaderboard/admin.py), answering 429 with `Retry-After` past the limits."""
    return _throttled_answer(admin.site.login(request))


def _throttled_answer(response: Any) -> Any:
    """A login page refused by the failed-login limits as 429 with `Retry-After` (the form,
    still in the page's context before it is rendered, says the wait)."""
    context = getattr(response, "context_data", None) or {}
    wait = getattr(context.get("form"), "throttle_wait", None)
    if wait is not None:
        response.status_code = 429
        response["Retry-After"] = str(wait)
    return response
