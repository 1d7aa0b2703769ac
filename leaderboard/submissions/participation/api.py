"""Participation through the API (docs/api.md, "Participation"): a benchmark's rules (read by
anyone who sees it, set by its hosts), requests to join (asked by users, listed and decided by
its hosts), the acceptance of its terms. A hidden benchmark the caller may not see is 404."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.catalog.teams.permissions import benchmark_user_can_host, benchmark_user_can_see
from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.submissions.participation import services
from leaderboard.submissions.participation.models import ParticipationRequest
from leaderboard.submissions.participation.selectors import (
    participation_request_get,
    participation_request_list,
    participation_rules_get,
    participation_standing,
)
from leaderboard.submissions.participation.serializers import (
    ParticipationDecisionInput,
    ParticipationRequestInput,
    ParticipationRequestOutput,
    ParticipationRequestQueryInput,
    ParticipationRulesInput,
    ParticipationRulesOutput,
    TermsAcceptanceInput,
    TermsAcceptanceOutput,
)

HOSTS_ONLY = "only the benchmark's hosts may do this"


def benchmark_or_404(slug: str, user: Any) -> Benchmark:
    """The benchmark, 404 where it does not exist or is hidden from this user."""
    try:
        benchmark = benchmark_get(slug=slug, include_hidden=True)
    except Benchmark.DoesNotExist:
        benchmark = None
    if benchmark is None or not benchmark_user_can_see(user=user, benchmark=benchmark):
        raise NotFound(f"no benchmark {slug!r}")
    return benchmark


def _hosts_only(user: Any, benchmark: Benchmark) -> None:
    if not benchmark_user_can_host(user=user, benchmark=benchmark):
        raise PermissionDenied(HOSTS_ONLY)


def _rules_body(request: Request, benchmark: Benchmark) -> dict[str, Any]:
    rules = participation_rules_get(benchmark=benchmark)
    you = participation_standing(user=request.user, benchmark=benchmark)
    return ParticipationRulesOutput({
        "benchmark": benchmark.slug, "mode": rules.mode,
        "require_verified_email": rules.require_verified_email, "terms": rules.terms,
        "terms_sha256": rules.terms_sha256, "defaults": rules.pk is None, "you": you}).data


class ParticipationRulesView(APIView):
    @extend_schema(
        operation_id="participation_rules_retrieve",
        summary="A benchmark's participation rules (open or by approval, a verified email, "
                "terms), and the caller's standing",
        responses={200: ParticipationRulesOutput, **error_responses(404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(_rules_body(request, benchmark_or_404(slug, request.user)))

    @extend_schema(
        operation_id="participation_rules_update",
        summary="Set a benchmark's participation rules (its hosts)",
        request=ParticipationRulesInput,
        responses={200: ParticipationRulesOutput, **error_responses(400, 401, 403, 404)},
    )
    def put(self, request: Request, slug: str) -> Response:
        user = signed_in_user(request)
        benchmark = benchmark_or_404(slug, user)
        _hosts_only(user, benchmark)
        form = ParticipationRulesInput(data=request.data)
        form.is_valid(raise_exception=True)
        services.participation_rules_set(benchmark=benchmark, by=user, **form.validated_data)
        return Response(_rules_body(request, benchmark))


class ParticipationRequestListCreateView(GenericAPIView[ParticipationRequest]):
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> QuerySet[ParticipationRequest]:
        user = self.request.user
        benchmark = benchmark_or_404(self.kwargs["slug"], user)
        query = ParticipationRequestQueryInput(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        requests = participation_request_list(benchmark=benchmark,
                                              status=query.validated_data.get("status"))
        if not benchmark_user_can_host(user=user, benchmark=benchmark):
            # a participant: their own
            requests = requests.filter(user=signed_in_user(self.request))
        return requests

    @extend_schema(
        operation_id="participation_requests_list",
        summary="Requests to join the benchmark, newest first (its hosts: all; anyone else: "
                "their own; paginated)",
        parameters=[OpenApiParameter("status", str, enum=["pending", "approved", "refused"])],
        responses={200: ParticipationRequestOutput(many=True), **error_responses(400, 401, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(ParticipationRequestOutput(page, many=True).data)

    @extend_schema(
        operation_id="participation_requests_create",
        summary="Ask to join a benchmark in approval mode; its hosts are told",
        request=ParticipationRequestInput,
        responses={201: ParticipationRequestOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        user = signed_in_user(request)
        benchmark = benchmark_or_404(slug, user)
        form = ParticipationRequestInput(data=request.data)
        form.is_valid(raise_exception=True)
        made = services.participation_request_create(user=user, benchmark=benchmark,
                                                     message=form.validated_data["message"])
        return Response(ParticipationRequestOutput(made).data, status=status.HTTP_201_CREATED)


class ParticipationDecisionView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="participation_requests_decide",
        summary="Approve or refuse a pending request to join, with a note (its hosts; once)",
        request=ParticipationDecisionInput,
        responses={200: ParticipationRequestOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, request_id: int) -> Response:
        user = signed_in_user(request)
        benchmark = benchmark_or_404(slug, user)
        _hosts_only(user, benchmark)
        try:
            asked = participation_request_get(benchmark=benchmark, request_id=request_id)
        except ParticipationRequest.DoesNotExist:
            raise NotFound(f"no request {request_id} to join {benchmark.slug}") from None
        form = ParticipationDecisionInput(data=request.data)
        form.is_valid(raise_exception=True)
        decided = services.participation_request_decide(
            request=asked, by=user, approve=form.validated_data["decision"] == "approve",
            note=form.validated_data["note"])
        return Response(ParticipationRequestOutput(decided).data)


class TermsAcceptanceView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="participation_terms_accept",
        summary="Accept the benchmark's current terms, named by their sha256 (201; 200 when "
                "already accepted, the first time kept)",
        request=TermsAcceptanceInput,
        responses={201: TermsAcceptanceOutput, 200: TermsAcceptanceOutput,
                   **error_responses(400, 401, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        user = signed_in_user(request)
        benchmark = benchmark_or_404(slug, user)
        form = TermsAcceptanceInput(data=request.data)
        form.is_valid(raise_exception=True)
        acceptance, created = services.terms_accept(
            user=user, benchmark=benchmark, sha256=form.validated_data["terms_sha256"])
        return Response(TermsAcceptanceOutput(acceptance).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

