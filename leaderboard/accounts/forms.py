"""HTML forms: they validate what a person typed; services do the writing."""

from __future__ import annotations

from django.contrib.auth.forms import UserCreationForm


class SignupForm(UserCreationForm):
    """Django's own: a username and the password twice, checked by the password validators."""
