"""Benchmarks and their leaderboards: public reads."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_list
from leaderboard.catalog.serializers import BenchmarkOutput
from leaderboard.common.api import error_responses


def _benchmark_or_404(slug: str) -> Benchmark:
    benchmark = benchmark_list().filter(slug=slug).first()
    if benchmark is None:
        raise NotFound(f"no benchmark {slug!r}")
    return benchmark


class BenchmarkListView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="benchmarks_list",
        summary="Every benchmark with its example sets and label sets (a plain list)",
        responses={200: BenchmarkOutput(many=True)},
    )
    def get(self, request: Request) -> Response:
        return Response(BenchmarkOutput(benchmark_list(), many=True).data)


class BenchmarkDetailView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="benchmarks_retrieve",
        summary="One benchmark with its example sets and label sets",
        responses={200: BenchmarkOutput, **error_responses(404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(BenchmarkOutput(_benchmark_or_404(slug)).data)
