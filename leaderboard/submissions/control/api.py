"""Withdraw, cancel, re-run a submission (POST, one view each): the owner, or for withdraw a
maintainer with a reason. Answers with the submission; refusals in the one error shape
(docs/api.md §6.5)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.submissions.control.serializers import SubmissionWithdrawInput
from leaderboard.submissions.control.services import (
    submission_cancel,
    submission_rerun,
    submission_withdraw,
)
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import submission_visible_get
from leaderboard.submissions.serializers import SubmissionDetailOutput


def _visible(request: Request, submission_id: int) -> Submission:
    """404 for one the caller cannot see, so a private submission's existence stays hidden."""
    try:
        return submission_visible_get(submission_id=submission_id, user=request.user)
    except Submission.DoesNotExist:
        raise NotFound(f"no submission {submission_id} that you can see") from None


def _answer(submission: Submission) -> Response:
    # The row as the service left it: a maintainer who withdrew a submission may no longer
    # see it (private now), but is told what was done.
    return Response(SubmissionDetailOutput(submission).data)


class SubmissionWithdrawView(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [JSONParser, FormParser]

    @extend_schema(
        operation_id="submissions_withdraw",
        summary="Withdraw a submission: off every board for good, its scores kept for its "
                "owner (its owner; or a maintainer, with a reason the owner sees)",
        request=SubmissionWithdrawInput,
        responses={200: SubmissionDetailOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, submission_id: int) -> Response:
        submission = _visible(request, submission_id)
        form = SubmissionWithdrawInput(data=request.data)
        form.is_valid(raise_exception=True)
        return _answer(submission_withdraw(
            submission=submission, user=signed_in_user(request),
            reason=form.validated_data["reason"]))


class SubmissionCancelView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="submissions_cancel",
        summary="Cancel one's own queued submission (409 `not_cancellable` once a worker "
                "has taken it); a cancelled submission does not count in the daily quota",
        request=None,
        responses={200: SubmissionDetailOutput, **error_responses(401, 403, 404, 409)},
    )
    def post(self, request: Request, submission_id: int) -> Response:
        return _answer(submission_cancel(
            submission=_visible(request, submission_id), user=signed_in_user(request)))


class SubmissionRerunView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="submissions_rerun",
        summary="Run again one's own submission that failed through the server's fault "
                "(worker_lost, time_limit, internal_error), free of the daily quota",
        request=None,
        responses={200: SubmissionDetailOutput, **error_responses(401, 403, 404, 409)},
    )
    def post(self, request: Request, submission_id: int) -> Response:
        return _answer(submission_rerun(
            submission=_visible(request, submission_id), user=signed_in_user(request)))
