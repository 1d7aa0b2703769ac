"""django-allauth's adapters: who may sign up (EVALSERVER_SIGNUP_MODE), how its emails leave
(by a worker, never in the request), and the login stages (docs/participants/account.md,
docs/operators/settings.md "Accounts").

- open: anyone; domains: email addresses at EVALSERVER_SIGNUP_ALLOWED_DOMAINS only;
  invitation: with the code of an unused `SignupInvitation`; closed: nobody. A social sign-up
  (GitHub, ORCID, Google) is held to the same mode.
- The verification and password-reset emails are rendered here and sent by the notify queue's
  worker (`leaderboard.tasks.cpu.send_account_email`, queued by name when the request's
  transaction commits: leaderboard/queue.py), so that a slow or unreachable mail server never
  holds a web request.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.stages import EmailVerificationStage
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import (
    DefaultSocialAccountAdapter,
    _build_apps_from_settings,
)
from allauth.socialaccount.models import SocialLogin
from django.conf import settings
from django.contrib import messages
from django.contrib.sites.shortcuts import get_current_site
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.forms import BaseForm
from django.http import HttpRequest
from django.shortcuts import redirect

from leaderboard import queue
from leaderboard.accounts.invitations import invitation_use

INVITATION_FIELD = "invitation"


def signup_mode() -> str:
    return str(settings.EVALSERVER_SIGNUP_MODE)


def email_domain_allowed(email: str) -> bool:
    """Whether sign-up admits this address in `domains` mode: its domain is one of
    EVALSERVER_SIGNUP_ALLOWED_DOMAINS exactly (a subdomain must be listed itself)."""
    domain = email.rpartition("@")[2].strip().lower()
    return domain in settings.EVALSERVER_SIGNUP_ALLOWED_DOMAINS


def domains_refusal() -> str:
    return ("Sign-up is open to email addresses at "
            + ", ".join(settings.EVALSERVER_SIGNUP_ALLOWED_DOMAINS) + " only.")


class AccountAdapter(DefaultAccountAdapter):

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return signup_mode() != "closed"

    def clean_email(self, email: str) -> str:
        email = super().clean_email(email)
        if signup_mode() == "domains" and not email_domain_allowed(email):
            raise ValidationError(domains_refusal(), code="email_domain")
        return email

    def save_user(self, request: HttpRequest, user: Any, form: BaseForm,
                  commit: bool = True) -> Any:
        """The new account, and in invitation mode the invitation it used, together: a code
        taken meanwhile by another sign-up rolls the account back."""
        if signup_mode() != "invitation" or not commit:
            return super().save_user(request, user, form, commit)
        with transaction.atomic():
            user = super().save_user(request, user, form, commit)
            if not invitation_use(code=form.cleaned_data.get(INVITATION_FIELD) or "",
                                  user=user):
                transaction.set_rollback(True)
                messages.error(request, "That invitation code has just been used: ask for "
                                        "another one.")
                raise ImmediateHttpResponse(redirect("account_signup"))
        return user

    def send_mail(self, template_prefix: str, email: str, context: dict[str, Any]) -> None:
        """Render the email here (its links need the request) and queue it for the worker."""
        request = context.get("request") or self.request
        context = {"request": request, "email": email,
                   "current_site": get_current_site(request), **context}
        message = self.render_mail(template_prefix, email, context)
        html = ""
        if isinstance(message, EmailMultiAlternatives):
            html = next((str(content) for content, kind in message.alternatives
                         if kind == "text/html"), "")
        queue.account_email_queue(subject=str(message.subject), body=str(message.body),
                                  html=html, to=list(message.to),
                                  from_email=str(message.from_email))

    def get_login_stages(self) -> list[str]:
        return [AddressNeededVerificationStage.path if stage ==
                "allauth.account.stages.EmailVerificationStage" else stage
                for stage in super().get_login_stages()]


class AddressNeededVerificationStage(EmailVerificationStage):
    """allauth's email verification at login, but for an account made before sign-up asked
    for an address and still without one: it logs in, and is then asked for its address
    before anything else (leaderboard/accounts/middleware.py), rather than waiting for a
    verification email that has nowhere to go."""

    path = "leaderboard.accounts.adapters.AddressNeededVerificationStage"

    def handle(self) -> tuple[Any, bool]:
        user = self.login.user
        if not self.login.signup and user is not None and not user.email and \
                not user.emailaddress_set.exists():
            return None, True
        return super().handle()


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    """A social sign-up is held to the same mode: in domains mode the address the provider
    gives must be at an allowed domain; in invitation mode the sign-up form asks for the
    code (SOCIALACCOUNT_AUTO_SIGNUP is off then) and the account adapter takes it.

    The providers' apps come from the settings alone (SOCIALACCOUNT_PROVIDERS, from the
    EVALSERVER_*_CLIENT_ID/SECRET variables): SocialApp rows, which the admin could add, are
    never read, so what the environment says is what is offered."""

    def list_apps(self, request: HttpRequest | None, provider: str | None = None,
                  client_id: str | None = None) -> list[Any]:
        apps = _build_apps_from_settings(provider=provider, client_id=client_id)
        return [app for each in apps.values() for app in each]

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        mode = signup_mode()
        if mode == "closed":
            return False
        if mode == "domains":
            user = sociallogin.user
            addresses = [address.email for address in sociallogin.email_addresses]
            if user is not None and user.email:
                addresses.append(user.email)
            if not any(email_domain_allowed(address) for address in addresses):
                messages.error(request, domains_refusal())
                return False
        return True
