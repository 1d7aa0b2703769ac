"""Ground-truth review in the API (maintainers only): open candidates, and answers."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.review.ground_truth import selectors as selectors_ground_truth
from leaderboard.review.ground_truth import services as ground_truth
from leaderboard.review.ground_truth.models import GroundTruthAnswer, GroundTruthCandidate
from leaderboard.review.panel.api import (
    REVIEWER_PERMISSIONS,
    benchmark_or_404,
    panel_item_reviewable_or_404,
    panel_vote_response,
)
from leaderboard.review.serializers import ClassLabelOutput


class GroundTruthCandidateOutput(serializers.Serializer):
    id = serializers.IntegerField(source="candidate.pk")
    label_set = serializers.CharField(source="candidate.label_set.slug")
    # its name in the API (docs/api.md §1)
    image_set = serializers.CharField(source="candidate.label_set.example_set.slug")
    example_index = serializers.IntegerField(source="candidate.example_index")
    file_name = serializers.CharField()
    given = serializers.SerializerMethodField(help_text="the original label")
    guessed = serializers.SerializerMethodField(help_text="the candidate label")
    # a declared field, popped from the class by the serializer metaclass: not Field.source
    source = serializers.CharField(  # type: ignore[assignment]
        source="candidate.source", help_text='e.g. "audit:<id>", "manual"')
    evidence = serializers.JSONField(source="candidate.evidence")
    votes = serializers.IntegerField(source="vote_count", help_text="answers cast so far")
    panel_size = serializers.IntegerField(help_text="answers that decide the candidate")

    @staticmethod
    def _label(class_id: int, name: str) -> dict[str, Any]:
        return {"class_id": class_id, "name": name}

    @extend_schema_field(ClassLabelOutput)
    def get_given(self, view: selectors_ground_truth.CandidateView) -> dict[str, Any]:
        return ClassLabelOutput(self._label(view.candidate.given, view.given_name)).data

    @extend_schema_field(ClassLabelOutput)
    def get_guessed(self, view: selectors_ground_truth.CandidateView) -> dict[str, Any]:
        return ClassLabelOutput(self._label(view.candidate.guessed, view.guessed_name)).data


class GroundTruthVoteInput(serializers.Serializer):
    answer = serializers.ChoiceField(choices=GroundTruthAnswer.choices)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class GroundTruthVoteOutput(serializers.Serializer):
    candidate = serializers.IntegerField(source="pk")
    status = serializers.CharField(help_text="open | decided")
    category = serializers.CharField(
        help_text="once decided: non_error, correctable, multi_label, neither, non_agreement")
    votes = serializers.IntegerField(source="vote_count")
    panel_size = serializers.IntegerField()
    version = serializers.IntegerField(source="version.number", allow_null=True,
                                       help_text="the label-set version that settled it")


class GroundTruthQueueView(GenericAPIView[GroundTruthCandidate]):
    permission_classes = REVIEWER_PERMISSIONS

    def get_queryset(self) -> QuerySet[GroundTruthCandidate]:
        return selectors_ground_truth.ground_truth_queue(
            benchmark=benchmark_or_404(self.request, self.kwargs["slug"]))

    @extend_schema(
        operation_id="ground_truth_queue",
        summary="Open ground-truth candidates, oldest first (paginated; maintainers only)",
        responses={200: GroundTruthCandidateOutput(many=True), **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        page = self.paginate_queryset(self.get_queryset()) or []
        views = [selectors_ground_truth.ground_truth_candidate_view(c) for c in page]
        return self.get_paginated_response(GroundTruthCandidateOutput(views, many=True).data)


class GroundTruthVoteCreateView(APIView):
    permission_classes = REVIEWER_PERMISSIONS

    @extend_schema(
        operation_id="ground_truth_vote_create",
        summary="Answer on a ground-truth candidate; the answer that fills the panel decides it",
        request=GroundTruthVoteInput,
        responses={201: GroundTruthVoteOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, candidate_id: int) -> Response:
        panel_item_reviewable_or_404(request, GroundTruthCandidate, candidate_id,
                                     "ground-truth candidate")
        form = GroundTruthVoteInput(data=request.data)
        form.is_valid(raise_exception=True)
        candidate = ground_truth.ground_truth_vote_cast(
            candidate_id=candidate_id, reviewer=signed_in_user(request), **form.validated_data)
        return panel_vote_response(GroundTruthVoteOutput, candidate,
                                   ground_truth.GROUND_TRUTH_PANEL)
