"""Input and output shapes of the host teams' operations: requests to host and their
decisions, a user's teams, one team with its members and benchmarks, a member's role
(docs/api.md §11)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.catalog.teams.models import HostRequest, HostTeamMembership, TeamRole
from leaderboard.common.slugs import SLUG_MAX_LENGTH, SLUG_PATTERN


class HostRequestInput(serializers.Serializer):
    slug = serializers.RegexField(
        rf"\A{SLUG_PATTERN}\Z", max_length=SLUG_MAX_LENGTH,
        error_messages={"invalid": "a slug: lower-case letters, digits, '.', '_', '-', "
                                   "starting and ending with a letter or digit"},
        help_text="the team's slug, as in its URL (/teams/<slug>/)")
    name = serializers.CharField(max_length=200, help_text="the team's name, e.g. the lab's")
    reason = serializers.CharField(required=False, allow_blank=True, default="",
                                   max_length=4000, help_text="what the team will host")


class HostRequestListQuery(serializers.Serializer):
    status = serializers.ChoiceField(choices=HostRequest.Status.choices, required=False,
                                     help_text="only the requests of this status")


class HostRequestDecisionInput(serializers.Serializer):
    decision = serializers.ChoiceField(choices=[("approve", "approve"), ("refuse", "refuse")])
    note = serializers.CharField(required=False, allow_blank=True, default="",
                                 max_length=4000, help_text="shown to the requester")


class HostRequestOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    team_slug = serializers.CharField()
    team_name = serializers.CharField()
    reason = serializers.CharField()
    status = serializers.CharField(help_text="pending | approved | refused")
    requested_by = serializers.CharField(source="requested_by.username")
    created = serializers.DateTimeField()
    decided_by = serializers.SerializerMethodField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_note = serializers.CharField()
    team = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_decided_by(self, request: HostRequest) -> str | None:
        return request.decided_by.username if request.decided_by is not None else None

    @extend_schema_field(serializers.CharField(
        allow_null=True, help_text="once approved: the slug of the team made"))
    def get_team(self, request: HostRequest) -> str | None:
        return request.team.slug if request.team is not None else None


class TeamOfUserOutput(serializers.Serializer):
    slug = serializers.CharField(source="team.slug")
    name = serializers.CharField(source="team.name")
    role = serializers.CharField(help_text="admin | host | reviewer")
    url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.URLField(help_text="the team in this API"))
    def get_url(self, membership: HostTeamMembership) -> str:
        path = reverse("api-team-detail", args=[membership.team.slug])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class TeamMemberOutput(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    role = serializers.CharField(help_text="admin | host | reviewer")


class TeamBenchmarkOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    hidden = serializers.BooleanField()


class TeamDetailOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    site = serializers.BooleanField(source="is_site", help_text="the site team")
    role = serializers.CharField(allow_null=True,
                                 help_text="the caller's role (null: a superuser outside it)")
    members = TeamMemberOutput(many=True)
    benchmarks = TeamBenchmarkOutput(many=True)


class TeamMemberInput(serializers.Serializer):
    role = serializers.ChoiceField(choices=TeamRole.choices,
                                   help_text="admin | host | reviewer")


class TeamMemberSetOutput(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField()
    changed = serializers.BooleanField(help_text="false when they held the role already")


def team_detail_data(team: Any, *, role: str | None, members: Any,
                     benchmarks: Any) -> dict[str, Any]:
    return {"slug": team.slug, "name": team.name, "is_site": team.is_site, "role": role,
            "members": list(members), "benchmarks": list(benchmarks)}
