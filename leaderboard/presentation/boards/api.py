"""Benchmarks and their leaderboards: public reads."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.http import urlencode
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.common.api import error_responses
from leaderboard.common.api_errors import error_response
from leaderboard.presentation.boards.conditional import (
    PUBLIC_CACHE_CONTROL,
    board_etag,
    conditional_headers_add,
    etag_matches,
    not_modified,
)
from leaderboard.presentation.boards.selectors import LeaderboardQueryError, leaderboard_get
from leaderboard.presentation.boards.serializers import (
    LeaderboardOutput,
    LeaderboardPage,
    LeaderboardQueryInput,
    LeaderboardQuerySchema,
    leaderboard_json,
)
from leaderboard.presentation.caching import cached_render, source_format

# What the cached JSON body is built from (the format in its cache key, see caching.py).
LEADERBOARD_JSON_MODULES = ("leaderboard.presentation.boards.serializers",
                            "leaderboard.presentation.boards.selectors",
                            "leaderboard.presentation.boards.rank_ub",
                            "leaderboard.presentation.boards.hidden",
                            "leaderboard.presentation.boards.api")


class LeaderboardView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="benchmarks_leaderboard",
        summary="Public scored submissions with scores, ranks and rank shifts",
        parameters=[LeaderboardQuerySchema],
        responses={200: LeaderboardOutput, 304: None, **error_responses(400, 404)},
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        # One query for the row (its generation keys the cache and the ETag), not
        # benchmark_list's prefetches.
        try:
            benchmark = benchmark_get(slug=slug)
        except Benchmark.DoesNotExist:
            raise NotFound(f"no benchmark {slug!r}") from None
        # an empty page or page_size is none (docs/api.md §4)
        query = LeaderboardQueryInput(data={k: v for k, v in request.query_params.items()
                                            if v != "" or k not in ("page", "page_size")})
        query.is_valid(raise_exception=True)
        sort: str | None = query.validated_data["sort"]  # None: the reference label set
        version: str | None = query.validated_data["version"] or None
        number: int = query.validated_data["page"]
        size: int = query.validated_data["page_size"]
        json_format = source_format(modules=LEADERBOARD_JSON_MODULES)
        # Revalidation first: before any board is read (docs/api.md §5.2, "Caching").
        etag = board_etag(benchmark=benchmark, format=json_format)
        if etag_matches(request=request, etag=etag):
            return not_modified(etag=etag, cache_control=PUBLIC_CACHE_CONTROL)
        origin = request.build_absolute_uri("/")[:-1]

        def url(n: int, sort: str) -> str:
            return origin + request.path + "?" + urlencode(
                {"sort": sort, **({"version": version} if version else {}),
                 "page": str(n), "page_size": str(size)})

        def build() -> bytes:
            board = leaderboard_get(benchmark=benchmark, sort=sort, version=version)
            count = len(board.rows)
            if number > 1 and (number - 1) * size >= count:
                raise NotFound(f"no page {number} of {count} rows at {size} a page")
            return leaderboard_json(LeaderboardPage(
                board, number, size,
                next=url(number + 1, board.sort) if number * size < count else None,
                previous=url(number - 1, board.sort) if number > 1 else None))

        # Each page's body is the same for every caller (public, anonymous read): cached
        # bytes of that page alone (a first page of a 10,000-row board reads ~100 KB, not the
        # whole board), no serializer and no renderer on a hit. Same key parts as
        # leaderboard_get, and the origin the page's links name.
        try:
            body = cached_render((json_format, benchmark.pk, benchmark.leaderboard_generation,
                                  sort, version, size, number, origin), build)
        except LeaderboardQueryError as exc:
            return error_response(exc.code, exc.message, field=exc.field)
        return conditional_headers_add(HttpResponse(body, content_type="application/json"),
                                       etag=etag, cache_control=PUBLIC_CACHE_CONTROL)
