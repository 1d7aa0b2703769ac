"""HTML forms: they validate what a person typed; services do the writing."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError

from leaderboard.accounts.login_throttle import login_attempt_start, login_success_record


class SignupForm(UserCreationForm):
    """Django's own: a username and the password twice, checked by the password validators."""


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
    is no staff member fails like a wrong password, and is counted as one."""
