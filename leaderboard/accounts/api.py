"""`/api/auth/token/`: get (POST) or revoke (DELETE) the caller's API token; `/api/me/`: who the
caller is (docs/api.md §2)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.exceptions import ErrorDetail
from rest_framework.permissions import AllowAny, BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.login_throttle import (
    login_attempt_start,
    login_success_record,
)
from leaderboard.accounts.selectors import user_address_unverified, user_mfa_active
from leaderboard.accounts.services import token_get_or_create, token_revoke
from leaderboard.catalog.teams.permissions import user_is_maintainer
from leaderboard.catalog.teams.selectors import host_team_memberships_of_user
from leaderboard.common.api import CodedCharField, error_responses, signed_in_user
from leaderboard.common.api_errors import error_response


class TokenCreateInput(serializers.Serializer):
    username = CodedCharField(missing_code="missing_username", missing_message="give a username",
                              trim_whitespace=False)
    password = CodedCharField(missing_code="missing_password", missing_message="give a password",
                              trim_whitespace=False, style={"input_type": "password"})


class TokenOutput(serializers.Serializer):
    token = serializers.CharField(help_text="send as the header `Authorization: Token <token>`")


class TokenView(APIView):
    """One token per user: POST returns it (creating it when needed), DELETE revokes it."""

    # token creation has a rate limit of its own (leaderboard/common/throttling.py)
    throttle_scopes = {"POST": "token"}

    def get_permissions(self) -> list[BasePermission]:
        if self.request.method == "POST":
            return [AllowAny()]
        return [IsAuthenticated()]

    @extend_schema(
        operation_id="auth_token_create",
        summary="Get an API token with a username and password",
        request=TokenCreateInput,
        responses={200: TokenOutput, **error_responses(400, 403, 429)},
        auth=[],
    )
    def post(self, request: Request) -> Response:
        form = TokenCreateInput(data=request.data)
        form.is_valid(raise_exception=True)
        username = form.validated_data["username"]
        # the client's, behind a trusted proxy too (evalserver/client_address.py)
        address = request.META.get("REMOTE_ADDR", "")
        # counted as a failure from here on, unless the password is right
        wait = login_attempt_start(username=username, address=address)
        if wait is not None:
            throttled = exceptions.Throttled(wait)
            # set after construction: DRF appends "Expected available in N seconds." to a
            # detail given to the constructor, which would say the wait twice
            throttled.detail = ErrorDetail(f"too many failed logins; try again in {wait} s",
                                           code="throttled")
            raise throttled
        user = authenticate(request._request, username=username,
                            password=form.validated_data["password"])
        if user is None:
            return error_response("invalid_credentials",
                                  "wrong username or password (or the account is inactive)")
        login_success_record(username=username, address=address)
        if user_mfa_active(user=user):
            # a password alone must not give what logging in asks a second factor for
            return error_response(
                "mfa_required", "this account uses two-factor authentication: log in on the "
                "web and create or copy its token on /profile/", http_status=403)
        if settings.ACCOUNT_EMAIL_VERIFICATION == "mandatory" and \
                user_address_unverified(user=user):
            # as the login page: no account before its address is verified
            return error_response(
                "email_unverified", "verify your email address first: log in on the web, "
                "which sends the link", http_status=403)
        token, _ = token_get_or_create(user=user)
        return Response(TokenOutput({"token": token.key}).data)

    @extend_schema(
        operation_id="auth_token_revoke",
        summary="Revoke the caller's API token",
        request=None,
        responses={204: None, **error_responses(401)},
    )
    def delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        token_revoke(user=signed_in_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeTeamOutput(serializers.Serializer):
    slug = serializers.CharField(source="team.slug")
    name = serializers.CharField(source="team.name")
    role = serializers.CharField(help_text="admin | host | reviewer (docs/hosts/teams.md)")


class MeOutput(serializers.Serializer):
    username = serializers.CharField()
    staff = serializers.BooleanField(
        help_text="Django's staff flag: no right over benchmarks by itself (docs/hosts/teams.md)")
    maintainer = serializers.BooleanField(
        help_text="holds a role in some host team (or is a superuser): reviews, and as a host "
                  "runs, that team's benchmarks (`teams` says which)")
    teams = MeTeamOutput(many=True, help_text="the host teams the caller is in, with their "
                                              "role in each")


class MeView(APIView):
    """Who the credentials belong to: what `evalserver-client whoami` prints, and how a client
    checks a token before storing it."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="me_retrieve",
        summary="The signed-in caller's account",
        responses={200: MeOutput, **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        user = signed_in_user(request)
        return Response(MeOutput({"username": user.username, "staff": user.is_staff,
                                  "maintainer": user_is_maintainer(user=user),
                                  "teams": host_team_memberships_of_user(user=user)}).data)
