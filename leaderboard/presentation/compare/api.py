"""Compare two submissions: GET /api/submissions/<id>/compare/<other>/ (docs/api.md §6.6)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.common.api import error_responses
from leaderboard.presentation.compare.selectors import (
    comparison_examples_get,
    comparison_get,
    comparison_label_set_default,
    comparison_pair_get,
)
from leaderboard.presentation.compare.serializers import (
    ComparisonOutput,
    ComparisonQueryInput,
    comparison_json,
)


class ComparisonView(APIView):
    """Anyone may compare two public scored submissions; a private one only its owner (or
    staff): to anyone else it is 404, as on its own page."""

    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="submissions_compare",
        summary="Two scored submissions of one benchmark example by example: per public label "
                "set both accuracies, the McNemar test, ranks, and a page of the examples "
                "exactly one gets right",
        parameters=[ComparisonQueryInput],
        responses={200: ComparisonOutput, **error_responses(400, 404)},
    )
    def get(self, request: Request, submission_id: int, other_id: int) -> Response:
        query = ComparisonQueryInput(data=request.query_params)
        query.is_valid(raise_exception=True)
        first, second = comparison_pair_get(first_id=submission_id, second_id=other_id,
                                            user=request.user)
        comparison = comparison_get(first=first, second=second)
        label_set = (query.validated_data["label_set"]
                     or comparison_label_set_default(comparison=comparison))
        examples = None if label_set is None else comparison_examples_get(
            comparison=comparison, label_set=label_set, page=query.validated_data["page"],
            page_size=query.validated_data["page_size"])
        return Response(comparison_json(comparison, examples))

