"""Benchmarks and their leaderboards: public reads."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.common.api import error_responses
from leaderboard.common.api_errors import error_response
from leaderboard.presentation.boards.selectors import LeaderboardQueryError, leaderboard_get
from leaderboard.presentation.boards.serializers import (
    LeaderboardOutput,
    LeaderboardQueryInput,
    LeaderboardQuerySchema,
    leaderboard_json,
)
from leaderboard.presentation.caching import cached_render, source_format

# What the cached JSON body is built from (the format in its cache key, see caching.py).
LEADERBOARD_JSON_MODULES = ("leaderboard.presentation.boards.serializers",
                            "leaderboard.presentation.boards.selectors",
                            "leaderboard.presentation.boards.significance")


class LeaderboardView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="benchmarks_leaderboard",
        summary="Public scored submissions with scores, ranks and rank shifts",
        parameters=[LeaderboardQuerySchema],
        responses={200: LeaderboardOutput, **error_responses(400, 404)},
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        # One query for the row (its generation keys the cache), not benchmark_list's prefetches.
        try:
            benchmark = benchmark_get(slug=slug)
        except Benchmark.DoesNotExist:
            raise NotFound(f"no benchmark {slug!r}") from None
        query = LeaderboardQueryInput(data=request.query_params)
        query.is_valid(raise_exception=True)
        sort: str = query.validated_data["sort"]
        version: str | None = query.validated_data["version"] or None

        def build() -> bytes:
            return leaderboard_json(
                leaderboard_get(benchmark=benchmark, sort=sort, version=version))

        # The body is the same for every caller (public, anonymous read): cached bytes, no
        # serializer and no renderer on a hit. Same key parts as leaderboard_get.
        try:
            body = cached_render((source_format(modules=LEADERBOARD_JSON_MODULES), benchmark.pk,
                                  benchmark.leaderboard_generation, sort, version), build)
        except LeaderboardQueryError as exc:
            return error_response(exc.code, exc.message, field=exc.field)
        return HttpResponse(body, content_type="application/json")
