"""Input and output shapes of the benchmark and leaderboard operations."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.catalog.models import LabelSet
from leaderboard.common.slugs import SLUG_MAX_LENGTH, SLUG_PATTERN

# A slug's form in the OpenAPI schema, for input fields naming a benchmark: the rule of slugs
# in paths (leaderboard/common/slugs.py). Which benchmarks exist is data, not schema: a
# well-formed slug that names none is schema-valid, and the operation answers it with 400
# `unknown_benchmark`.
SLUG_SCHEMA: dict[str, Any] = {
    "type": "string", "minLength": 1, "maxLength": SLUG_MAX_LENGTH,
    "pattern": f"^{SLUG_PATTERN}$"}


class ExampleSetOutput(serializers.Serializer):
    slug = serializers.CharField()
    size = serializers.IntegerField(help_text="number of examples, in canonical order")


class LabelSetOutput(serializers.Serializer):
    slug = serializers.CharField()
    image_set = serializers.CharField(source="example_set.slug")  # its name in the API
    kind = serializers.CharField(help_text="single | multi | soft")
    version = serializers.SerializerMethodField(
        help_text="number of the current version (the newest published: a newer one is "
                  "published once every submission has its score on it)")
    version_hash = serializers.SerializerMethodField(
        help_text="content hash of that version; null for a hidden label set")

    @staticmethod
    def _latest(label_set: LabelSet) -> Any:
        # `version_list` is prefetched by benchmark_list: the published versions, oldest first.
        versions = getattr(label_set, "version_list", None)
        if versions is None:
            versions = list(label_set.versions.filter(published__isnull=False)
                            .order_by("number"))
        return versions[-1] if versions else None

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_version(self, label_set: LabelSet) -> int | None:
        latest = self._latest(label_set)
        return None if latest is None else int(latest.number)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_version_hash(self, label_set: LabelSet) -> str | None:
        latest = self._latest(label_set)
        # Not a hidden label set's: the hash of its labels would let anyone check a guess of
        # them (docs/metrics.md §17).
        return None if latest is None or label_set.labels_hidden else str(latest.content_hash)


class BenchmarkOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    num_classes = serializers.IntegerField()
    # The API's names for example sets (docs/api.md §1): image_set, kept for v1 clients.
    main_image_set = serializers.CharField(
        source="main_example_set", help_text="the example set every submission must include")
    image_sets = ExampleSetOutput(many=True, source="example_sets")
    label_sets = LabelSetOutput(many=True)
