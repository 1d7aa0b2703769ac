"""Submissions: create (multipart upload), list the caller's own, read one, change visibility."""

from __future__ import annotations

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.common.api_errors import file_too_large_error
from leaderboard.common.uploads import upload_too_large
from leaderboard.submissions.checkpoints import CHECKPOINT_FIELD
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import submission_list_for_owner, submission_visible_get
from leaderboard.submissions.serializers import (
    SubmissionCreatedOutput,
    SubmissionCreateInput,
    SubmissionCreateSerializer,
    SubmissionDetailOutput,
    SubmissionVisibilityInput,
)
from leaderboard.submissions.services import (
    SubmissionError,
    submission_create,
    submission_visibility_set,
)


class SubmissionListCreateView(GenericAPIView[Submission]):
    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser, JSONParser]
    # uploads have a rate limit of their own besides the daily quota
    # (leaderboard/common/throttling.py)
    throttle_scopes = {"POST": "uploads"}

    def get_queryset(self) -> QuerySet[Submission]:
        return (submission_list_for_owner(owner=self.request.user)
                .select_related("owner").prefetch_related("files__example_set"))

    @extend_schema(
        operation_id="submissions_list",
        summary="The caller's own submissions, newest first (paginated)",
        responses={200: SubmissionDetailOutput(many=True), **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(SubmissionDetailOutput(page, many=True).data)

    @extend_schema(
        operation_id="submissions_create",
        summary="Submit predictions (one file per example set, each field named by its slug) or "
                "a model (one `checkpoint` file: ONNX, or a safetensors state dict)",
        request={"multipart/form-data": SubmissionCreateSerializer},
        responses={201: SubmissionCreatedOutput, **error_responses(400, 401, 413, 429)},
    )
    def post(self, request: Request) -> Response:
        data = request.data  # parses the body; the size cap may stop it part-way
        too_large = upload_too_large(request)
        if too_large:
            raise file_too_large_error(too_large)
        for name in request.FILES:
            if len(request.FILES.getlist(name)) > 1:
                raise SubmissionError(
                    "duplicate_file", f"one file per example set: {name!r} came more than once",
                    field=name)
        form = SubmissionCreateInput(data=data)
        form.is_valid(raise_exception=True)
        files = {name: request.FILES[name] for name in request.FILES}
        checkpoint = files.pop(CHECKPOINT_FIELD, None)
        submission = submission_create(owner=signed_in_user(request), files=files,
                                                checkpoint=checkpoint, **form.validated_data)
        url = request.build_absolute_uri(reverse("api-submission-detail", args=[submission.pk]))
        body = SubmissionCreatedOutput({"id": submission.pk, "status": submission.status,
                                        "url": url}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": url})


class SubmissionDetailView(APIView):
    """Visible to its owner, to staff, and to anyone once public and scored; otherwise 404,
    so that a private submission's existence is never revealed."""

    def _visible(self, request: Request, submission_id: int) -> Submission:
        try:
            return submission_visible_get(submission_id=submission_id,
                                                    user=request.user)
        except Submission.DoesNotExist:
            raise NotFound(f"no submission {submission_id} that you can see") from None

    @extend_schema(
        operation_id="submissions_retrieve",
        summary="One submission: status, files and scores on every label set",
        responses={200: SubmissionDetailOutput, **error_responses(404)},
    )
    def get(self, request: Request, submission_id: int) -> Response:
        return Response(SubmissionDetailOutput(self._visible(request, submission_id)).data)

    @extend_schema(
        operation_id="submissions_visibility",
        summary="Show or hide one's own submission on the public leaderboard",
        request=SubmissionVisibilityInput,
        responses={200: SubmissionDetailOutput, **error_responses(400, 401, 403, 404)},
    )
    def patch(self, request: Request, submission_id: int) -> Response:
        submission = self._visible(request, submission_id)
        if submission.owner_id != request.user.pk:
            raise PermissionDenied("only the submitter can change a submission's visibility",
                                   code="not_owner")
        form = SubmissionVisibilityInput(data=request.data)
        form.is_valid(raise_exception=True)
        submission_visibility_set(submission=submission,
                                           public=form.validated_data["public"])
        return Response(SubmissionDetailOutput(self._visible(request, submission_id)).data)

