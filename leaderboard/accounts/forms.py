"""HTML forms: they validate what a person typed; services do the writing. The pages of
accounts are django-allauth's, with the forms below (settings ACCOUNT_FORMS, SOCIALACCOUNT_FORMS);
the admin's login keeps Django's form (`AdminLoginForm`)."""

from __future__ import annotations

from typing import Any

from allauth.account.forms import LoginForm as AllauthLoginForm
from allauth.account.forms import SignupForm as AllauthSignupForm
from allauth.socialaccount.forms import SignupForm as AllauthSocialSignupForm
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from leaderboard.accounts.adapters import INVITATION_FIELD
from leaderboard.accounts.invitations import invitation_usable_get
from leaderboard.accounts.login_throttle import login_attempt_start, login_success_record
from leaderboard.accounts.selectors import user_mfa_active


def _throttled(form: Any, typed: str) -> None:
    """Count a login attempt for the failed-login limits before its password is checked;
    past a limit, refuse it (`form.throttle_wait`: the seconds to wait, for the 429)."""
    address = form.request.META.get("REMOTE_ADDR", "") if form.request else ""
    wait = login_attempt_start(username=typed, address=address)
    if wait is not None:
        form.throttle_wait = wait
        raise ValidationError(f"Too many failed logins: try again in {wait} seconds.",
                              code="throttled")


class AccountLoginForm(AllauthLoginForm):
    """allauth's login form (a username or an email address, and the password) held to the
    failed-login limits like every other login (leaderboard/accounts/login_throttle.py): the
    attempt is counted by what was typed, before the password is checked; a success clears
    its count. `AccountLoginView` answers 429 with Retry-After past a limit."""

    throttle_wait: int | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "Username or email"

    def clean(self) -> dict[str, Any]:
        typed = str(self.data.get("login", "")).strip()
        _throttled(self, typed)
        cleaned: dict[str, Any] = super().clean()  # the password check: raises when it fails
        if not self.errors:
            address = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
            login_success_record(username=typed, address=address)
        return cleaned


class _InvitationMixin:
    """In invitation mode (EVALSERVER_SIGNUP_MODE), a required invitation code, which must be
    that of an unused invitation for this address; the adapter takes it when the account is
    saved (leaderboard/accounts/adapters.py)."""

    fields: dict[str, forms.Field]
    cleaned_data: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._invitation_field_add()

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        self._invitation_check(self.add_error)  # type: ignore[attr-defined]
        return cleaned

    def _invitation_field_add(self) -> None:
        if settings.EVALSERVER_SIGNUP_MODE == "invitation":
            self.fields[INVITATION_FIELD] = forms.CharField(
                label="Invitation code", max_length=64,
                help_text="Sign-up on this server is by invitation: the code you were sent.")

    def _invitation_check(self, add_error: Any) -> None:
        if settings.EVALSERVER_SIGNUP_MODE != "invitation":
            return
        code = self.cleaned_data.get(INVITATION_FIELD) or ""
        email = self.cleaned_data.get("email") or ""
        if code and invitation_usable_get(code=code, email=email) is None:
            add_error(INVITATION_FIELD, ValidationError(
                "This invitation code is unknown, already used, or for another address.",
                code="invitation"))


class AccountSignupForm(_InvitationMixin, AllauthSignupForm):
    """allauth's sign-up: an email address, a username (shown on the boards), the password
    twice; and an invitation code when sign-up is by invitation."""


class SocialSignupForm(_InvitationMixin, AllauthSocialSignupForm):
    """A social sign-up's form (shown when the provider's details are not enough, and always
    in invitation mode), with the invitation code in that mode."""


class LoginForm(AuthenticationForm):
    """Django's login form held to the failed-login limits (leaderboard/accounts/
    login_throttle.py), as the API's token endpoint is: the attempt is counted before the
    password is checked (an invalid form included), and past a limit it is refused without
    the check, `throttle_wait` saying the seconds to wait (the view answers 429 with
    Retry-After). A success clears its count."""

    throttle_wait: int | None = None

    def clean(self) -> dict[str, Any]:
        address = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
        # counted as a failure from here on, unless the password is right
        wait = login_attempt_start(username=str(self.data.get("username", "")), address=address)
        if wait is not None:
            self.throttle_wait = wait
            raise ValidationError(f"Too many failed logins: try again in {wait} seconds.",
                                  code="throttled")
        cleaned = super().clean()  # the password check: a ValidationError when it fails
        login_success_record(username=self.get_user().get_username(), address=address)
        return cleaned


class AdminLoginForm(LoginForm, AdminAuthenticationForm):
    """The admin's login form (`admin.site.login_form`), held to the same limits: a user who
    is no staff member fails like a wrong password, and is counted as one. An account with
    two-factor authentication is sent to the site's login, which asks for its code: this
    form checks the password alone."""

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if user_mfa_active(user=user):
            raise ValidationError("This account uses two-factor authentication: log in on "
                                  "/accounts/login/?next=/admin/ instead.", code="mfa_required")
