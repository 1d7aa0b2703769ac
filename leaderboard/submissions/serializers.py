"""Input and output shapes of the submission operations."""

from __future__ import annotations

from typing import Any

from django.db import connection
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.selectors import benchmark_get, benchmark_list, example_set_visible_list
from leaderboard.catalog.serializers import SLUG_SCHEMA
from leaderboard.common.api import CodedCharField
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.releases.selectors import (
    ReleaseView,
    release_views_for_submission,
)
from leaderboard.submissions.selectors import submission_scores

URL_MAX_LENGTH = Submission._meta.get_field("paper_url").max_length


@extend_schema_field(SLUG_SCHEMA)
class BenchmarkSlugField(CodedCharField):
    """A benchmark's slug; the schema gives its pattern (validate_benchmark looks it up, and
    answers a wrong one, well-formed or not, with the benchmarks there are)."""


class SubmissionCreateInput(serializers.Serializer):
    """The form fields of a submission; the files (one per example set, named by its slug) are
    taken from the request's files and checked by `services.submission_create`."""

    benchmark = BenchmarkSlugField(missing_code="missing_benchmark",
                                   missing_message="name the benchmark (e.g. cifar10)",
                                   help_text="benchmark slug, e.g. `cifar10`")
    model_name = CodedCharField(missing_code="missing_model_name", missing_message="name the model",
                                max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    public = serializers.BooleanField(default=True, help_text="shown on the public leaderboard "
                                      "once scored (default true)")
    # The database's limits, checked here: PostgreSQL refuses a longer value at insert
    # (a 500), SQLite would store it.
    paper_url = serializers.URLField(required=False, allow_blank=True, default="",
                                     max_length=URL_MAX_LENGTH)
    code_url = serializers.URLField(required=False, allow_blank=True, default="",
                                    max_length=URL_MAX_LENGTH)

    def validate_benchmark(self, value: str) -> Benchmark:
        try:
            return benchmark_get(slug=value)
        except Benchmark.DoesNotExist:
            known = ", ".join(b.slug for b in benchmark_list())
            raise serializers.ValidationError(
                f"no benchmark {value!r}; use one of: {known or '(none loaded)'}",
                code="unknown_benchmark") from None


@extend_schema_field(OpenApiTypes.BINARY)
class PredictionsFileField(serializers.FileField):
    """A file upload as the schema shows it (binary; the default would say a URI)."""


def _example_set_file_fields() -> dict[str, serializers.Field]:
    """One predictions file field per example set of every visible benchmark, from the
    database (read when the schema is generated, so a benchmark added later is documented).
    None before the catalog tables exist: `manage.py check --deploy` generates the schema
    (drf-spectacular's check) on a server that has not migrated yet."""
    if ExampleSet._meta.db_table not in connection.introspection.table_names():
        return {}
    return {
        example_set.slug: PredictionsFileField(
            required=False,
            help_text=f"{example_set.benchmark.slug}: predictions for {example_set.slug} "
                      f"({example_set.size} rows; .npy, .npz, .json or .csv)"
                      + (" - required" if example_set.slug == example_set.benchmark.main_example_set
                         else ""))
        for example_set in example_set_visible_list()
    }


class SubmissionCreateSerializer(SubmissionCreateInput):
    """The multipart body as the schema documents it (the component `SubmissionCreateRequest`:
    COMPONENT_SPLIT_REQUEST appends "Request"): the form fields, one predictions file per
    example set of the loaded benchmarks, or a checkpoint. The view checks the files against
    the chosen benchmark's example sets (`services.submission_create`)."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = dict(super().get_fields())
        fields.update(_example_set_file_fields())
        fields["checkpoint"] = PredictionsFileField(
            required=False,
            help_text="instead of predictions: a model the server runs on the example sets "
                      "it has images for (.onnx, or .safetensors for the benchmark's own "
                      "architecture; see GET /api/benchmarks/ `checkpoint`)")
        return fields


class SubmissionVisibilityInput(serializers.Serializer):
    public = serializers.BooleanField(help_text="show on the public leaderboard (true) or hide")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A form body without `public` is an error, not false (DRF's HTML-form default).
        self.fields["public"].default_empty_html = empty


class SubmissionCreatedOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(help_text="queued | running | scored | failed | cancelled")
    url = serializers.URLField(help_text="the submission in this API: poll it for the scores")


class SubmissionFileOutput(serializers.Serializer):
    image_set = serializers.CharField(source="example_set.slug")  # its name in the API
    name = serializers.CharField(source="original_name")
    size = serializers.IntegerField(help_text="bytes")
    sha256 = serializers.CharField()


class ScoreOutput(serializers.Serializer):
    """The headline figures; every other figure of the score record follows them (top-5,
    gap, correctable-set accuracies, human agreement, ... depending on the label set)."""

    accuracy = serializers.FloatField(allow_null=True)
    correct = serializers.IntegerField()
    total = serializers.IntegerField()
    ci_low = serializers.FloatField(allow_null=True, help_text="95% Clopper-Pearson interval")
    ci_high = serializers.FloatField(allow_null=True)
    version = serializers.IntegerField(source="label_set_version.number")
    version_hash = serializers.CharField(source="label_set_version.content_hash")

    def to_representation(self, instance: Score) -> dict[str, Any]:
        record = instance.record if isinstance(instance.record, dict) else {}
        return {**record, **super().to_representation(instance)}


def latest_scores(submission: Submission) -> dict[str, Score]:
    """The newest-version score of each label set: from prefetched rows when the list view
    prefetched them (the rule of submission_scores), else from the selector."""
    if "scores" not in getattr(submission, "_prefetched_objects_cache", {}):
        return submission_scores(submission=submission)
    latest: dict[str, Score] = {}
    for score in sorted(submission.scores.all(), key=lambda s: -s.label_set_version.number):
        latest.setdefault(score.label_set.slug, score)
    return latest


class ReleaseOutput(serializers.Serializer):
    """A hidden label set's released figure (docs/metrics.md §17): the only figure of it
    that leaves the server."""

    label_set = serializers.CharField()
    version = serializers.IntegerField(source="version_number")
    mechanism = serializers.CharField(help_text="exact | ladder | parameter_free")
    step = serializers.FloatField(allow_null=True, help_text="the Ladder's step (eta)")
    improved = serializers.BooleanField(
        help_text="whether this submission moved its participant's released best")
    released = serializers.FloatField(
        allow_null=True, help_text="this submission's own released accuracy; null when the "
        "mechanism released nothing of its own")
    best = serializers.FloatField(help_text="the participant's released best after it")
    ci_low = serializers.SerializerMethodField()
    ci_high = serializers.SerializerMethodField()
    total = serializers.IntegerField(help_text="examples the figures are over")
    message = serializers.CharField(help_text="what happened, in words")

    def get_ci_low(self, view: ReleaseView) -> float:
        return view.interval[0]

    def get_ci_high(self, view: ReleaseView) -> float:
        return view.interval[1]


class CheckpointOutput(serializers.Serializer):
    format = serializers.CharField(help_text="onnx | safetensors")
    original_name = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    device = serializers.CharField(help_text="where it ran (cpu | cuda); empty until it has")
    images_per_second = serializers.FloatField(allow_null=True)


class SubmissionDetailOutput(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="predictions | checkpoint")
    benchmark = serializers.CharField(source="benchmark.slug")
    model_name = serializers.CharField()
    description = serializers.CharField()
    paper_url = serializers.CharField()
    code_url = serializers.CharField()
    public = serializers.BooleanField()
    status = serializers.CharField(help_text="queued | running | scored | failed | cancelled")
    failure_code = serializers.CharField(allow_null=True, help_text="when failed")
    failure_reason = serializers.CharField(allow_null=True, help_text="when failed")
    withdrawn = serializers.DateTimeField(allow_null=True, help_text="when it was withdrawn "
                                          "(off every board for good)")
    withdrawn_reason = serializers.CharField(allow_null=True, help_text="a maintainer's reason "
                                             "for withdrawing it, or its owner's")
    reruns = serializers.IntegerField(help_text="times its owner ran it again after a failure "
                                      "of the server's")
    created = serializers.DateTimeField()
    # the API's name for the job's `finished_at` (docs/api.md)
    scored = serializers.DateTimeField(source="finished_at", allow_null=True,
                                       help_text="when scoring finished (or failed)")
    owner = serializers.CharField(source="owner.username")
    files = SubmissionFileOutput(many=True, help_text="for a checkpoint: its predictions, "
                                 "written by the worker that ran it")
    checkpoint = serializers.SerializerMethodField()
    scores = serializers.SerializerMethodField()
    releases = serializers.SerializerMethodField()

    @extend_schema_field(CheckpointOutput(allow_null=True))
    def get_checkpoint(self, submission: Submission) -> dict[str, Any] | None:
        row = getattr(submission, "checkpoint", None) \
            if submission.kind == Submission.Kind.CHECKPOINT else None
        return None if row is None else dict(CheckpointOutput(row).data)

    @extend_schema_field(serializers.DictField(child=ScoreOutput(), help_text="by label set slug"))
    def get_scores(self, submission: Submission) -> dict[str, Any]:
        # In the order of the leaderboard's columns (label sets as created: original first).
        latest = sorted(latest_scores(submission).items(), key=lambda item: item[1].label_set_id)
        return {slug: ScoreOutput(score).data for slug, score in latest}

    @extend_schema_field(ReleaseOutput(many=True, help_text="per hidden label set"))
    def get_releases(self, submission: Submission) -> list[dict[str, Any]]:
        return [dict(ReleaseOutput(view).data)
                for view in release_views_for_submission(submission=submission)]

    def to_representation(self, instance: Submission) -> dict[str, Any]:
        data = dict(super().to_representation(instance))
        for name in ("failure_code", "failure_reason", "withdrawn_reason"):
            data[name] = data[name] or None
        return data
