"""What a signed-in user must do before using the site's pages (docs/participants/account.md):

- with EVALSERVER_MFA_REQUIRED, a user holding a maintainer role (any host-team role:
  `leaderboard.catalog.teams.permissions.user_is_maintainer`) and no TOTP authenticator is
  sent to allauth's TOTP activation page;
- an account made before sign-up asked for an email address, still without one, is sent to
  the email page to add one.

Only pages signed in through the session are held: the API (/api/) is not (a client's token
keeps working unchanged, docs/api.md §2), nor are logging out and the pages that do what is
asked. The checks read the user already loaded (its `email`; a query more only for an account
without one) and, for maintainers only when the setting is on, one query for their
authenticators.
"""

from __future__ import annotations

from collections.abc import Callable

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from leaderboard.catalog.teams.permissions import user_is_maintainer

# paths never held: the API, files, probes
_FREE_PREFIXES = ("/api/", "/static/", "/media/", "/healthz", "/metrics")


def _mfa_pages() -> tuple[str, ...]:
    return (reverse("mfa_index"), reverse("account_reauthenticate"), reverse("account_logout"),
            reverse("logout"))


def _email_pages() -> tuple[str, ...]:
    return (reverse("account_email"), reverse("account_email_verification_sent"),
            "/accounts/confirm-email/", reverse("account_logout"), reverse("logout"),
            *_mfa_pages())


def totp_missing(user: object) -> bool:
    """Whether EVALSERVER_MFA_REQUIRED asks this user to activate TOTP first."""
    return bool(settings.EVALSERVER_MFA_REQUIRED and user_is_maintainer(user=user)  # type: ignore[arg-type]
                and not Authenticator.objects.filter(
                    user=user, type=Authenticator.Type.TOTP).exists())


def address_missing(user: object) -> bool:
    """Whether this account has no email address at all (not even one added and waiting for
    its verification); the query only for accounts whose `User.email` is empty."""
    return not getattr(user, "email", "") and not EmailAddress.objects.filter(
        user=user).exists()


class AccountCompletionMiddleware:

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = request.user
        path = request.path
        if user.is_authenticated and not path.startswith(_FREE_PREFIXES):
            if totp_missing(user) and not path.startswith(_mfa_pages()):
                if request.method == "GET":
                    messages.info(request, "Maintainers on this server use two-factor "
                                           "authentication: activate an authenticator app "
                                           "to continue.")
                return redirect("mfa_activate_totp")
            if address_missing(user) and not path.startswith(_email_pages()):
                if request.method == "GET":
                    messages.info(request, "Add your email address to continue: it lets you "
                                           "reset your password.")
                return redirect("account_email")
        return self.get_response(request)
