"""The forms of the host teams' pages: ask to host, decide a request, set or remove a member."""

from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from leaderboard.catalog.teams.models import TeamRole
from leaderboard.common.slugs import SLUG_MAX_LENGTH, SLUG_PATTERN


class HostRequestForm(forms.Form):
    slug = forms.CharField(
        label="Team slug", max_length=SLUG_MAX_LENGTH,
        validators=[RegexValidator(rf"\A{SLUG_PATTERN}\Z", "a slug: lower-case letters, "
                                   "digits, '.', '_', '-', starting and ending with a letter "
                                   "or digit")],
        help_text="As in the team's address, <code>/teams/&lt;slug&gt;/</code>, e.g. "
                  "<code>vision-lab</code>.")
    name = forms.CharField(label="Team name", max_length=200,
                           help_text="Your lab's or group's name.")
    reason = forms.CharField(label="What you will host", required=False, max_length=4000,
                             widget=forms.Textarea(attrs={"rows": 4}))


class HostRequestDecisionForm(forms.Form):
    request_id = forms.IntegerField(widget=forms.HiddenInput)
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("refuse", "Refuse")])
    note = forms.CharField(label="Note to the requester", required=False, max_length=4000,
                           widget=forms.Textarea(attrs={"rows": 2}))


class TeamMemberForm(forms.Form):
    username = forms.CharField(label="Username", max_length=150)
    role = forms.ChoiceField(label="Role", choices=TeamRole.choices)


class TeamMemberRemoveForm(forms.Form):
    username = forms.CharField(max_length=150, widget=forms.HiddenInput)
