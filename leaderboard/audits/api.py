"""Label audits in the API (maintainers only): start one, list them, read one's report."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.audits import selectors as selectors_audits
from leaderboard.audits import services as audits
from leaderboard.audits.models import Audit
from leaderboard.audits.serializers import AuditCreateInput, AuditDetailOutput, AuditOutput
from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.review.panel.api import REVIEWER_PERMISSIONS


class AuditListCreateView(GenericAPIView[Audit]):
    permission_classes = REVIEWER_PERMISSIONS

    def get_queryset(self) -> QuerySet[Audit]:
        return selectors_audits.audit_list(user=self.request.user).prefetch_related(
            "submissions")

    @extend_schema(
        operation_id="audits_list",
        summary="Label audits, newest first (paginated; maintainers only)",
        responses={200: AuditOutput(many=True), **error_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        data = AuditOutput(page, many=True, context={"request": request}).data
        return self.get_paginated_response(data)

    @extend_schema(
        operation_id="audits_create",
        summary="Start a label audit (confident learning over submissions, or AUL); its flags "
                "become ground-truth candidates (maintainers only)",
        request=AuditCreateInput,
        responses={201: AuditDetailOutput, **error_responses(400, 401, 403)},
    )
    def post(self, request: Request) -> Response:
        form = AuditCreateInput(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        audit = audits.audit_create(
            author=signed_in_user(request), benchmark=data["benchmark"],
            kind=data["kind"], submission_ids=data["submission_ids"], config=data["config"])
        audit = selectors_audits.audit_get(audit_id=audit.pk)
        body = AuditDetailOutput(audit, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["url"]})


class AuditDetailView(APIView):
    permission_classes = REVIEWER_PERMISSIONS

    @extend_schema(
        operation_id="audits_retrieve",
        summary="One audit: status, options, noise rate, flags, precision and recall against "
                "the validated errors, the AUL histogram, candidates created",
        responses={200: AuditDetailOutput, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, audit_id: int) -> Response:
        try:
            audit = selectors_audits.audit_get(audit_id=audit_id, user=request.user)
        except Audit.DoesNotExist:
            raise NotFound(f"no audit {audit_id}") from None
        return Response(AuditDetailOutput(audit, context={"request": request}).data)
