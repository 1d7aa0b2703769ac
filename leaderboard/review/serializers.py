"""Input and output shapes of the review and label-set history operations."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.common.api import QueryIntegerField
from leaderboard.review.models import MistakeCategory, Severity, Verdict


class ReviewQueueQueryInput(serializers.Serializer):
    label_set = serializers.CharField(required=False, allow_blank=True, default="",
                                      help_text="only this label set's items (slug)")


class LabelSetVersionQueryInput(serializers.Serializer):
    against = QueryIntegerField(
        required=False, allow_null=True, default=None, min_value=1,
        help_text="the version number to compare with (default: the parent)")


class ClassLabelOutput(serializers.Serializer):
    class_id = serializers.IntegerField()
    name = serializers.CharField()


class ReviewItemSummaryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    label_set = serializers.CharField(source="label_set.slug")
    example_index = serializers.IntegerField()
    class_id = serializers.IntegerField(help_text="the predicted class under review")
    submission_count = serializers.IntegerField(
        help_text="how many submissions predict this pair top-1")
    max_score = serializers.FloatField(allow_null=True,
                                       help_text="the highest score a submission gave it")
    votes = serializers.IntegerField(source="vote_count", help_text="votes cast so far")
    status = serializers.CharField(help_text="open | decided")
    url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.URLField(help_text="the item in this API"))
    def get_url(self, item: Any) -> str:
        path = reverse("api-review-item", args=[item.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class PanelJudgementOutput(serializers.Serializer):
    model = serializers.CharField(help_text="the model whose top-1 prediction was reviewed")
    # a declared field, popped from the class by the serializer metaclass: not Field.source
    source = serializers.CharField(  # type: ignore[assignment]
        help_text="the file the decision was imported from")
    verdict = serializers.ChoiceField(choices=[Verdict.WRONG], help_text="always wrong")
    severity = serializers.ChoiceField(choices=Severity.choices)
    reported_severity = serializers.ChoiceField(
        choices=[Severity.MAJOR, Severity.MINOR],
        help_text="as the authors report it: borderline counts as minor")
    category = serializers.ChoiceField(choices=MistakeCategory.choices)


class ReviewItemDetailOutput(serializers.Serializer):
    id = serializers.IntegerField(source="item.pk")
    benchmark = serializers.CharField(source="benchmark.slug")
    label_set = serializers.CharField(source="label_set.slug")
    image_set = serializers.CharField(source="label_set.example_set.slug")  # its API name
    example_index = serializers.IntegerField(source="item.example_index")
    file_name = serializers.CharField()
    predicted = ClassLabelOutput(help_text="the top-1 prediction under review")
    max_score = serializers.FloatField(allow_null=True)
    accepted = ClassLabelOutput(many=True, help_text="labels the latest version accepts")
    wrong = ClassLabelOutput(many=True, help_text="labels judged wrong before")
    submission_count = serializers.IntegerField(source="item.submission_count")
    status = serializers.CharField(source="item.status")
    verdict = serializers.CharField(source="item.verdict", help_text="once decided")
    votes = serializers.IntegerField(source="vote_count",
                                     help_text="votes cast so far (not their verdicts)")
    panel_size = serializers.IntegerField(help_text="votes that decide the item")
    voted = serializers.BooleanField(help_text="whether the caller has voted on it")
    version = serializers.IntegerField(source="version.number", allow_null=True,
                                       help_text="the label-set version shown")
    judgement = serializers.ChoiceField(
        choices=["accepted", "wrong", "unjudged"],
        help_text="what the version shown says of the pair (ours)")
    panel = PanelJudgementOutput(
        many=True, help_text="the expert panel's published decisions on the pair (Vasudevan "
                             "et al. 2022), one per reviewed model")


class ReviewVoteInput(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=Verdict.choices)
    problematic = serializers.BooleanField(default=False,
                                           help_text="the example's ground truth is problematic")
    severity = serializers.ChoiceField(choices=Severity.choices, required=False,
                                       allow_blank=True, default="",
                                       help_text="for a wrong verdict")
    category = serializers.ChoiceField(choices=MistakeCategory.choices, required=False,
                                       allow_blank=True, default="",
                                       help_text="for a wrong verdict")
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class ReviewVoteOutput(serializers.Serializer):
    item = serializers.IntegerField(source="pk")
    status = serializers.CharField(help_text="open | decided")
    verdict = serializers.CharField(help_text="the majority's verdict, once decided")
    problematic = serializers.BooleanField()
    votes = serializers.IntegerField(source="vote_count")
    panel_size = serializers.IntegerField()
    version = serializers.IntegerField(source="version.number", allow_null=True,
                                       help_text="the label-set version the decision made")


class SettledOutput(serializers.Serializer):
    item = serializers.IntegerField(allow_null=True)
    example = serializers.IntegerField()
    file_name = serializers.CharField()
    class_id = serializers.IntegerField(source="class")
    class_name = serializers.CharField()
    verdict = serializers.CharField()
    problematic = serializers.BooleanField()
    severity = serializers.ChoiceField(choices=Severity.choices, allow_blank=True,
                                       help_text="an imported expert-panel decision's")
    category = serializers.ChoiceField(choices=MistakeCategory.choices, allow_blank=True,
                                       help_text="an imported expert-panel decision's")
    source = serializers.CharField(  # type: ignore[assignment]  # a declared field, as above
        allow_blank=True, help_text="an imported expert-panel decision: file (model)")
    reviewers = serializers.ListField(child=serializers.CharField())


class LabelSetVersionOutput(serializers.Serializer):
    number = serializers.IntegerField(source="version.number")
    hash = serializers.CharField(source="version.content_hash")
    # a declared field, popped from the class by the serializer metaclass: not Field.parent
    parent = serializers.IntegerField(  # type: ignore[assignment]
        source="version.parent.number", allow_null=True,
                                      default=None, help_text="the parent's number")
    parent_hash = serializers.CharField(source="version.parent.content_hash", allow_null=True,
                                        default=None)
    author = serializers.CharField(allow_null=True, help_text="username")
    created = serializers.DateTimeField(source="version.created")
    published = serializers.DateTimeField(
        source="version.published", allow_null=True,
        help_text="when the version became current (boards and the API show it by default): "
                  "once every scored submission had its score on it; null until then")
    note = serializers.CharField(source="version.note")
    settled = SettledOutput(many=True, help_text="the review decisions this version made")
    rescore_status = serializers.ChoiceField(
        choices=["none", "pending", "done", "failed"],
        help_text="whether every submission has been re-scored on this version yet")


class RankShiftOutput(serializers.Serializer):
    submission_id = serializers.IntegerField()
    model_name = serializers.CharField()
    rank_before = serializers.IntegerField(help_text="rank under the `against` version")
    rank_after = serializers.IntegerField(help_text="rank under this version")
    shift = serializers.IntegerField(help_text="rank_before - rank_after (positive = moved up)")
    accuracy_before = serializers.FloatField(allow_null=True)
    accuracy_after = serializers.FloatField(allow_null=True)


class LabelSetVersionDetailOutput(LabelSetVersionOutput):
    against = serializers.IntegerField(
        source="against.number", allow_null=True, default=None,
        help_text="the version the rank shifts are measured from (the parent unless asked)")
    compared = serializers.IntegerField(
        help_text="public scored submissions with a score on both versions")
    rank_shifts = RankShiftOutput(many=True, source="shifts",
                                  help_text="the submissions whose rank moved")
