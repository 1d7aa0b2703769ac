"""`GET /api/benchmarks/<slug>/about/`: what each label set of a benchmark is, how it was
built, its size, its current version and whom to cite (the about page, as JSON)."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.catalog.models import Benchmark
from leaderboard.common.api import error_responses
from leaderboard.presentation.about import selectors as selectors_about


class CitationOutput(serializers.Serializer):
    key = serializers.CharField(help_text="empty for a reference known only by its text")
    authors = serializers.ListField(child=serializers.CharField(),
                                    help_text="'Family, Given' names, in the paper's order")
    title = serializers.CharField()
    venue = serializers.CharField()
    year = serializers.IntegerField(allow_null=True)
    url = serializers.CharField(help_text="the paper (empty when unknown)")
    text = serializers.CharField(help_text="the reference as the benchmark's bundle writes "
                                           "it (empty for a label set's family paper)")


class FactOutput(serializers.Serializer):
    key = serializers.CharField(help_text="stable name, e.g. `correctable`, `pruned`")
    title = serializers.CharField(source="label", help_text="what is counted, in words")
    value = serializers.IntegerField()


class LabelSetAboutOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField(help_text="single | multi | soft")
    family = serializers.CharField(help_text="which metrics score it (docs/metrics.md §1.6)")
    # The API's names for example sets (docs/api.md §1)
    image_set = serializers.CharField(source="example_set")
    image_set_size = serializers.IntegerField(source="example_set_size")
    available = serializers.BooleanField(help_text="false: in the catalog, not loaded here")
    needs = serializers.CharField(help_text="what an unavailable label set needs")
    what = serializers.CharField(help_text="what the label set is, in one sentence")
    how = serializers.ListField(child=serializers.CharField(),
                                help_text="how it was built and scored, in paragraphs")
    facts = FactOutput(many=True, help_text="counts from the current version's summary")
    evaluated = serializers.IntegerField(allow_null=True,
                                         help_text="examples evaluated (current version)")
    version = serializers.IntegerField(allow_null=True, help_text="current version number")
    version_hash = serializers.CharField(allow_null=True,
                                         help_text="null for a hidden label set")
    version_count = serializers.IntegerField()
    history_url = serializers.SerializerMethodField(
        help_text="the versions page (HTML); null for a hidden label set, which has none")
    versions_url = serializers.SerializerMethodField(help_text="the versions in this API")
    citations = CitationOutput(many=True)

    def _url_args(self, label_set: selectors_about.LabelSetAbout) -> list[str]:
        return [self.context["benchmark"], label_set.slug]

    def get_history_url(self, label_set: selectors_about.LabelSetAbout) -> str | None:
        return (reverse("label_set_history", args=self._url_args(label_set))
                if label_set.version is not None and not label_set.hidden else None)

    def get_versions_url(self, label_set: selectors_about.LabelSetAbout) -> str | None:
        return (reverse("api-label-set-versions", args=self._url_args(label_set))
                if label_set.version is not None and not label_set.hidden else None)


class BenchmarkAboutOutput(serializers.Serializer):
    benchmark = serializers.CharField(source="benchmark.slug")
    name = serializers.CharField(source="benchmark.name")
    num_classes = serializers.IntegerField(source="benchmark.num_classes")
    summary = serializers.CharField(help_text="the dataset, in plain words")
    citations = CitationOutput(many=True, help_text="the dataset's paper")
    label_sets = LabelSetAboutOutput(
        many=True, source="all_label_sets",
        help_text="in catalog order; those not loaded on this server last (available=false)")


class BenchmarkAboutView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="benchmarks_about",
        summary="What each label set is, how it was built, its size, version and citation",
        responses={200: BenchmarkAboutOutput, **error_responses(404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        try:
            about = selectors_about.benchmark_about(slug=slug)
        except Benchmark.DoesNotExist:
            raise NotFound(f"no benchmark {slug!r}") from None
        return Response(BenchmarkAboutOutput(about, context={"benchmark": slug}).data)
