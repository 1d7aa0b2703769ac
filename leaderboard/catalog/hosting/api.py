"""Hosting benchmarks through the API (a host team's hosts, on its own benchmarks only:
docs/hosts/teams.md): upload a bundle, read the upload's outcome, hide or show a benchmark
(docs/api.md §5.4)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.catalog.access import Action, benchmark_get_for
from leaderboard.catalog.hosting.selectors import bundle_upload_get, user_hosts_any_team
from leaderboard.catalog.hosting.serializers import (
    BenchmarkVisibilityOutput,
    BundleUploadCreatedOutput,
    BundleUploadInput,
    BundleUploadOutput,
)
from leaderboard.catalog.hosting.services import (
    BUNDLE_FIELD,
    BundleUploadError,
    benchmark_visibility_set,
    bundle_upload_create,
)
from leaderboard.catalog.models import Benchmark, BundleUpload
from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.common.api_errors import file_too_large_error
from leaderboard.common.uploads import upload_too_large


class IsHost(BasePermission):
    """The hosts and admins of some host team (and superusers); others get 403
    `permission_denied` with this message (anonymous callers 401 first, from IsAuthenticated).
    Which team an upload is for, and whose uploads one reads, is checked per upload."""

    message = "only the hosts and admins of a host team may add or update benchmarks"

    def has_permission(self, request: Request, view: Any) -> bool:
        return user_hosts_any_team(user=request.user)


UPLOAD_PERMISSIONS = [IsAuthenticated, IsHost]
# Hide and show: the benchmark's team decides (403 `permission_denied`, or 404 for a hidden
# benchmark outside the caller's team).
HOST_PERMISSIONS = [IsAuthenticated]


class BundleUploadCreateView(APIView):
    permission_classes = UPLOAD_PERMISSIONS
    parser_classes = [MultiPartParser, FormParser]
    throttle_scopes = {"POST": "uploads"}  # leaderboard/common/throttling.py

    @extend_schema(
        operation_id="benchmark_bundles_create",
        summary="Upload a benchmark bundle (.zip); a worker checks and adds it: poll `url` "
                "(the hosts of the upload's team)",
        request={"multipart/form-data": BundleUploadInput},
        responses={202: BundleUploadCreatedOutput, **error_responses(400, 401, 403, 413)},
    )
    def post(self, request: Request) -> Response:
        data = request.data  # parses the body; the size cap may stop it part-way
        too_large = upload_too_large(request)
        if too_large:
            raise file_too_large_error(too_large)
        if len(request.FILES.getlist(BUNDLE_FIELD)) > 1:
            raise BundleUploadError("duplicate_file", "one bundle per upload: 'bundle' came "
                                    "more than once", field=BUNDLE_FIELD)
        form = BundleUploadInput(data=data)
        form.is_valid(raise_exception=True)
        upload = bundle_upload_create(uploader=signed_in_user(request),
                                      bundle=form.validated_data["bundle"],
                                      update=form.validated_data["update"],
                                      team=form.validated_data["team"] or None)
        url = request.build_absolute_uri(reverse("api-bundle-upload-detail", args=[upload.pk]))
        body = BundleUploadCreatedOutput({"id": upload.pk, "status": upload.status,
                                          "url": url}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class BundleUploadDetailView(APIView):
    permission_classes = UPLOAD_PERMISSIONS

    @extend_schema(
        operation_id="benchmark_bundles_retrieve",
        summary="One bundle upload: its status, then the loader's report or why it was "
                "refused (code, message, file, field)",
        responses={200: BundleUploadOutput, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, upload_id: int) -> Response:
        try:
            upload = bundle_upload_get(upload_id=upload_id, user=request.user)
        except BundleUpload.DoesNotExist:
            raise NotFound(f"no bundle upload {upload_id}") from None
        return Response(BundleUploadOutput(upload, context={"request": request}).data)


def _visibility_set(request: Request, slug: str, *, hidden: bool) -> Response:
    try:
        benchmark = benchmark_get_for(user=request.user, slug=slug, action=Action.HOST)
    except Benchmark.DoesNotExist:
        raise NotFound(f"no benchmark {slug!r}") from None
    benchmark = benchmark_visibility_set(benchmark=benchmark, hidden=hidden)
    return Response(BenchmarkVisibilityOutput(benchmark).data)


class BenchmarkHideView(APIView):
    permission_classes = HOST_PERMISSIONS

    @extend_schema(
        operation_id="benchmarks_hide",
        summary="Hide a benchmark from every public list, board and the submit form; its "
                "submissions and scores stay (the hosts of its team)",
        request=None,
        responses={200: BenchmarkVisibilityOutput, **error_responses(401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        return _visibility_set(request, slug, hidden=True)


class BenchmarkUnhideView(APIView):
    permission_classes = HOST_PERMISSIONS

    @extend_schema(
        operation_id="benchmarks_unhide",
        summary="Show a hidden benchmark again (the hosts of its team)",
        request=None,
        responses={200: BenchmarkVisibilityOutput, **error_responses(401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        return _visibility_set(request, slug, hidden=False)
