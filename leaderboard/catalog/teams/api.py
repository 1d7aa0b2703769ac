"""Host teams in the API (docs/api.md §11): ask to host, list and decide requests to host (site
admins), a user's teams, one team (its members only), and a team's members (its admins).
Every refusal comes from the services (leaderboard/catalog/teams/services.py), which ask the
one module of rules (permissions.py)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.catalog.teams import selectors
from leaderboard.catalog.teams.models import HostRequest, HostTeam, HostTeamMembership
from leaderboard.catalog.teams.permissions import (
    host_requests_user_can_decide,
    team_user_can_manage,
    user_team_roles,
)
from leaderboard.catalog.teams.serializers import (
    HostRequestDecisionInput,
    HostRequestInput,
    HostRequestListQuery,
    HostRequestOutput,
    TeamDetailOutput,
    TeamMemberInput,
    TeamMemberSetOutput,
    TeamOfUserOutput,
    team_detail_data,
)
from leaderboard.catalog.teams.services import (
    host_request_create,
    host_request_decide,
    host_team_member_remove,
    host_team_member_set,
)
from leaderboard.common.api import error_responses, signed_in_user


class HostRequestListCreateView(GenericAPIView[HostRequest]):
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> QuerySet[HostRequest]:
        user = signed_in_user(self.request)
        query = HostRequestListQuery(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        chosen = query.validated_data.get("status")
        if host_requests_user_can_decide(user=user):
            return selectors.host_requests_list(status=chosen)
        mine = selectors.host_requests_of_user(user=user)
        return mine if chosen is None else mine.filter(status=chosen)

    @extend_schema(
        operation_id="host_requests_list",
        summary="Requests to host, newest first (paginated): a site admin's, every one; "
                "anyone else's, their own",
        parameters=[HostRequestListQuery],
        responses={200: HostRequestOutput(many=True), **error_responses(400, 401)},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(HostRequestOutput(page, many=True).data)

    @extend_schema(
        operation_id="host_requests_create",
        summary="Ask to host: the team (slug, name) to be made, and why; a site admin decides",
        request=HostRequestInput,
        responses={201: HostRequestOutput, **error_responses(400, 401, 409)},
    )
    def post(self, request: Request) -> Response:
        form = HostRequestInput(data=request.data)
        form.is_valid(raise_exception=True)
        made = host_request_create(user=signed_in_user(request), **form.validated_data)
        return Response(HostRequestOutput(made).data, status=status.HTTP_201_CREATED)


class HostRequestDecisionView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="host_requests_decide",
        summary="Approve (the team is made, the requester its admin) or refuse a pending "
                "request to host, once (site admins only)",
        request=HostRequestDecisionInput,
        responses={200: HostRequestOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, request_id: int) -> Response:
        user = signed_in_user(request)
        if not host_requests_user_can_decide(user=user):
            raise PermissionDenied("only site admins may decide requests to host")
        host_request = selectors.host_request_get(request_id=request_id)
        if host_request is None:
            raise NotFound(f"no request to host {request_id}")
        form = HostRequestDecisionInput(data=request.data)
        form.is_valid(raise_exception=True)
        decided = host_request_decide(actor=user, request=host_request,
                                      approve=form.validated_data["decision"] == "approve",
                                      note=form.validated_data["note"])
        return Response(HostRequestOutput(decided).data)


class TeamListView(GenericAPIView[HostTeamMembership]):
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> QuerySet[HostTeamMembership]:
        return selectors.host_team_memberships_of_user(user=signed_in_user(self.request))

    @extend_schema(
        operation_id="teams_list",
        summary="The caller's host teams, with their role in each (paginated)",
        responses={200: TeamOfUserOutput(many=True), **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(
            TeamOfUserOutput(page, many=True, context={"request": request}).data)


def _team_of_member(request: Request, slug: str) -> HostTeam:
    team = selectors.host_team_of_member(slug=slug, user=signed_in_user(request))
    if team is None:  # a team exists for its members only (docs/hosts/teams.md)
        raise NotFound(f"no team {slug!r}")
    return team


class TeamDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="teams_retrieve",
        summary="One team: its members with their roles and its benchmarks (members only)",
        responses={200: TeamDetailOutput, **error_responses(401, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        team = _team_of_member(request, slug)
        data = team_detail_data(
            team, role=user_team_roles(request.user).get(team.pk),
            members=selectors.host_team_members_list(team=team),
            benchmarks=selectors.host_team_benchmarks_list(team=team))
        return Response(TeamDetailOutput(data).data)


class TeamMemberView(APIView):
    permission_classes = [IsAuthenticated]

    def _user(self, username: str) -> Any:
        member = selectors.user_by_username(username=username)
        if member is None:
            raise NotFound(f"no user {username!r}")
        return member

    @extend_schema(
        operation_id="team_members_set",
        summary="Add a member to the team with a role, or change their role (the team's "
                "admins only; a team keeps one admin)",
        request=TeamMemberInput,
        responses={200: TeamMemberSetOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def put(self, request: Request, slug: str, username: str) -> Response:
        team = _team_of_member(request, slug)
        if not team_user_can_manage(user=request.user, team=team):
            # before the account is looked up: a member who is not an admin learns nothing
            raise PermissionDenied(f"only the admins of team {team.slug!r} may change its "
                                   "members")
        form = TeamMemberInput(data=request.data)
        form.is_valid(raise_exception=True)
        member = self._user(username)
        role = form.validated_data["role"]
        changed = host_team_member_set(actor=signed_in_user(request), team=team, user=member,
                                       role=role)
        return Response(TeamMemberSetOutput({"username": member.username, "role": role,
                                             "changed": changed}).data)

    @extend_schema(
        operation_id="team_members_remove",
        summary="Take a member out of the team (its admins, or the member themselves; the "
                "last admin stays)",
        request=None,
        responses={204: None, **error_responses(401, 403, 404, 409)},
    )
    def delete(self, request: Request, slug: str, username: str) -> Response:
        team = _team_of_member(request, slug)
        member = self._user(username)
        if not host_team_member_remove(actor=signed_in_user(request), team=team, user=member):
            raise NotFound(f"{username} is not a member of team {slug!r}")
        return Response(status=status.HTTP_204_NO_CONTENT)


