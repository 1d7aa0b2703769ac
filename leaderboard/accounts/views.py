"""Sign-up and the profile page with the user's API token. Log in and out are Django's own
views (`leaderboard/urls.py`); logging out is a POST form in the navigation bar."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from leaderboard.accounts import services as token_services
from leaderboard.accounts.forms import SignupForm
from leaderboard.accounts.selectors import token_get


def _safe_next(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return ""


def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        messages.success(request, f"Account {user.username} created: log in to continue.")
        login_url = reverse("login")
        target = _safe_next(request)
        return redirect(f"{login_url}?next={target}" if target else login_url)
    return render(request, "leaderboard/signup.html", {"form": form, "next": _safe_next(request)})


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required
    return user


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    token = token_get(user=_user(request))
    return render(request, "leaderboard/profile.html", {"token": token})


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
