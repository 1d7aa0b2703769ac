"""Input and output shapes of the comparison of two submissions (docs/api.md §6.6)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from leaderboard.common.api import QueryIntegerField
from leaderboard.presentation.compare.selectors import (
    EXAMPLES_MAX_PAGE,
    EXAMPLES_PAGE_SIZE,
    Comparison,
    ExamplePage,
)


class ComparisonQueryInput(serializers.Serializer):
    label_set = serializers.CharField(
        required=False, allow_blank=True, default="",
        help_text="the label set whose disagreements to list (default `original` when "
                  "compared, else the first paired one)")
    page = QueryIntegerField(min_value=1, default=1, help_text="page of the disagreements, 1-based")
    page_size = QueryIntegerField(
        min_value=1, max_value=EXAMPLES_MAX_PAGE, default=EXAMPLES_PAGE_SIZE,
        help_text=f"disagreements per page (default {EXAMPLES_PAGE_SIZE}, at most "
                  f"{EXAMPLES_MAX_PAGE})")


class ComparedSubmissionOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    model_name = serializers.CharField()
    owner = serializers.CharField(source="owner.username")
    public = serializers.BooleanField()


class SideOutput(serializers.Serializer):
    accuracy = serializers.FloatField(allow_null=True)
    correct = serializers.IntegerField()
    total = serializers.IntegerField()
    rank = serializers.IntegerField(
        allow_null=True, help_text="competition rank among the public scored submissions on "
        "this version; for one not on the board (`on_board` false), the rank it would have")
    on_board = serializers.BooleanField()


class LabelSetComparisonOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    image_set = serializers.CharField(source="example_set")  # its name in the API
    version = serializers.IntegerField(source="version.number")
    version_hash = serializers.CharField(source="version.content_hash")
    first = SideOutput()
    second = SideOutput()
    difference = serializers.FloatField(allow_null=True,
                                        help_text="first's accuracy minus second's")
    only_first = serializers.IntegerField(
        allow_null=True, help_text="examples only the first gets right (null: not paired)")
    only_second = serializers.IntegerField(
        allow_null=True, help_text="examples only the second gets right (null: not paired)")
    p_value = serializers.FloatField(
        allow_null=True, help_text="exact two-sided McNemar p-value (docs/metrics.md §10.5)")


class ExampleRowOutput(serializers.Serializer):
    index = serializers.IntegerField(help_text="the example's index in its example set")
    file_name = serializers.CharField()
    right = serializers.ChoiceField(choices=["first", "second"],
                                    help_text="the one of the two that gets it right")
    labels = serializers.DictField(
        child=serializers.ListField(child=serializers.IntegerField(), allow_null=True),
        help_text="per compared label set of the example set: the classes it counts correct "
                  "for the example (null where it does not evaluate it)")
    gallery_url = serializers.CharField(
        allow_null=True, help_text="the example in the mistake gallery of the one that gets "
                                   "it wrong, where it has a card")


class ExamplePageOutput(serializers.Serializer):
    label_set = serializers.CharField()
    count = serializers.IntegerField(help_text="examples exactly one of the two gets right")
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    page_count = serializers.IntegerField()
    results = ExampleRowOutput(many=True, source="rows")


class ComparisonOutput(serializers.Serializer):
    benchmark = serializers.CharField()
    first = ComparedSubmissionOutput()
    second = ComparedSubmissionOutput()
    label_sets = LabelSetComparisonOutput(many=True)
    examples = ExamplePageOutput(allow_null=True, help_text="null when no label set is paired")


def comparison_json(comparison: Comparison, examples: ExamplePage | None) -> dict[str, Any]:
    return dict(ComparisonOutput({
        "benchmark": comparison.first.benchmark.slug, "first": comparison.first,
        "second": comparison.second, "label_sets": comparison.label_sets,
        "examples": examples}).data)

