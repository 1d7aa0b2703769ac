"""The review queue (maintainers only) and the public history of label-set versions."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.common.api import error_responses, signed_in_user
from leaderboard.review import selectors as selectors_review
from leaderboard.review import services as review
from leaderboard.review.models import ReviewItem
from leaderboard.review.panel.api import (
    REVIEWER_PERMISSIONS,
    benchmark_or_404,
    benchmark_reviewable_or_404,
    panel_item_reviewable_or_404,
    panel_vote_response,
)
from leaderboard.review.serializers import (
    LabelSetVersionDetailOutput,
    LabelSetVersionOutput,
    LabelSetVersionQueryInput,
    ReviewItemDetailOutput,
    ReviewItemSummaryOutput,
    ReviewQueueQueryInput,
    ReviewVoteInput,
    ReviewVoteOutput,
)


def _item_detail(request: Request, item_id: int) -> selectors_review.ReviewItemDetail:
    try:
        item = ReviewItem.objects.select_related("label_set__benchmark__team").get(id=item_id)
        benchmark_reviewable_or_404(request, item.label_set.benchmark, f"review item {item_id}")
        return selectors_review.review_item_detail(item_id=item_id, reviewer=request.user)
    except ReviewItem.DoesNotExist:
        raise NotFound(f"no review item {item_id}") from None


class ReviewQueueView(GenericAPIView[ReviewItem]):
    permission_classes = REVIEWER_PERMISSIONS

    def get_queryset(self) -> QuerySet[ReviewItem]:
        benchmark = benchmark_or_404(self.request, self.kwargs["slug"])
        query = ReviewQueueQueryInput(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        label_set = None
        if query.validated_data["label_set"]:
            label_set = LabelSet.objects.filter(
                benchmark=benchmark, slug=query.validated_data["label_set"]).first()
            if label_set is None:
                raise NotFound(f"no label set {query.validated_data['label_set']!r} "
                               f"in {benchmark.slug}")
        return selectors_review.review_queue(benchmark=benchmark, label_set=label_set,
                                             reviewer=self.request.user)

    @extend_schema(
        operation_id="review_queue",
        summary="Open review items the caller has not voted on, most-predicted first "
                "(paginated; maintainers only)",
        parameters=[ReviewQueueQueryInput],
        responses={200: ReviewItemSummaryOutput(many=True), **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        data = ReviewItemSummaryOutput(page, many=True, context={"request": request}).data
        return self.get_paginated_response(data)


class ReviewItemDetailView(APIView):
    permission_classes = REVIEWER_PERMISSIONS

    @extend_schema(
        operation_id="review_item_retrieve",
        summary="One review item: the example, the prediction, what is known about its labels",
        responses={200: ReviewItemDetailOutput, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, item_id: int) -> Response:
        return Response(ReviewItemDetailOutput(_item_detail(request, item_id)).data)


class ReviewVoteCreateView(APIView):
    permission_classes = REVIEWER_PERMISSIONS

    @extend_schema(
        operation_id="review_vote_create",
        summary="Vote on a review item; the vote that fills the panel decides it",
        request=ReviewVoteInput,
        responses={201: ReviewVoteOutput, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, item_id: int) -> Response:
        panel_item_reviewable_or_404(request, ReviewItem, item_id, "review item")
        form = ReviewVoteInput(data=request.data)
        form.is_valid(raise_exception=True)
        item = review.review_vote_cast(item_id=item_id, reviewer=signed_in_user(request),
                                       **form.validated_data)
        return panel_vote_response(ReviewVoteOutput, item, review.REVIEW_PANEL)


def _label_set(slug: str, label_set: str) -> LabelSet:
    try:
        return selectors_review.label_set_get(benchmark_slug=slug, slug=label_set)
    except LabelSet.DoesNotExist:
        raise NotFound(f"no label set {label_set!r} in benchmark {slug!r}") from None


class LabelSetVersionListView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="label_set_versions_list",
        summary="A label set's versions, newest first, with the decisions each settled",
        responses={200: LabelSetVersionOutput(many=True), **error_responses(404)},
    )
    def get(self, request: Request, slug: str, label_set: str) -> Response:
        history = selectors_review.label_set_history(label_set=_label_set(slug, label_set),
                                                     shifts=False)
        return Response(LabelSetVersionOutput(history, many=True).data)


class LabelSetVersionDetailView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="label_set_versions_retrieve",
        summary="One label-set version with the rank shifts against its parent, or against "
                "any other version of the label set (`against`)",
        parameters=[LabelSetVersionQueryInput],
        responses={200: LabelSetVersionDetailOutput, **error_responses(400, 404)},
    )
    def get(self, request: Request, slug: str, label_set: str, number: int) -> Response:
        query = LabelSetVersionQueryInput(data=request.query_params)
        query.is_valid(raise_exception=True)
        against = query.validated_data["against"]
        try:
            entry = selectors_review.label_set_version_detail(
                label_set=_label_set(slug, label_set), number=number, against=against)
        except LabelSetVersion.DoesNotExist:
            missing = number if against is None else f"{number} or {against}"
            raise NotFound(f"{slug}/{label_set} has no version {missing}") from None
        return Response(LabelSetVersionDetailOutput(entry).data)
