"""Input and output shapes of the label-audit operations."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.audits.models import Audit
from leaderboard.audits.selectors import audit_summary
from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get, benchmark_list
from leaderboard.catalog.serializers import SLUG_SCHEMA

REPORT_EVIDENCE = 50


@extend_schema_field(SLUG_SCHEMA)
class BenchmarkSlugField(serializers.CharField):
    """A benchmark's slug; the schema gives its pattern (validate_benchmark looks it up, and
    answers a wrong one, well-formed or not, with the benchmarks there are)."""


class AuditCreateInput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Audit.Kind.choices)
    benchmark = BenchmarkSlugField(help_text="benchmark slug: the audit reads its original "
                                             "labels, candidates go to its corrected set")
    submission_ids = serializers.ListField(
        child=serializers.IntegerField(), required=False, default=list,
        help_text="confident learning: scored submissions with probabilities (averaged)")
    config = serializers.DictField(
        required=False, default=dict,
        help_text="options: AUL epochs, batch_size, lr, momentum, channels, seed, bins, "
                  "gmm_n_init, num_threads, device (auto/cpu/cuda); confident learning "
                  "filter_by, frac_noise, min_examples_per_class; both max_candidates "
                  "(default 100)")

    def validate_benchmark(self, value: str) -> Benchmark:
        try:
            return benchmark_get(slug=value)
        except Benchmark.DoesNotExist:
            known = ", ".join(b.slug for b in benchmark_list())
            raise serializers.ValidationError(
                f"no benchmark {value!r}; use one of: {known or '(none loaded)'}",
                code="unknown_benchmark") from None


class HistogramOutput(serializers.Serializer):
    counts = serializers.ListField(child=serializers.IntegerField())
    edges = serializers.ListField(child=serializers.FloatField())
    centres = serializers.ListField(child=serializers.FloatField())
    low_curve = serializers.ListField(child=serializers.FloatField(), allow_null=True,
                                      help_text="the low-loss component, examples per bin")
    high_curve = serializers.ListField(child=serializers.FloatField(), allow_null=True,
                                       help_text="the high-loss component, examples per bin")


class AuditSummaryOutput(serializers.Serializer):
    noise_rate = serializers.FloatField(
        allow_null=True, help_text="AUL: the high component's weight; confident learning: "
                                   "cleanlab's estimated issues / examples")
    num_examples = serializers.IntegerField(allow_null=True)
    num_flagged = serializers.IntegerField(allow_null=True)
    flagged_fraction = serializers.FloatField(allow_null=True)
    validation = serializers.JSONField(
        allow_null=True, help_text="precision and recall against the human-validated errors: "
                                   "`all` flags and the `top` max_candidates")
    mixture = serializers.JSONField(allow_null=True, help_text="AUL: the two components")
    histogram = HistogramOutput(allow_null=True, help_text="AUL only")
    progress = serializers.JSONField(allow_null=True,
                                     help_text="AUL while running: epochs done and total")


class AuditOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    kind = serializers.CharField()
    benchmark = serializers.CharField(source="benchmark.slug")
    image_set = serializers.CharField(source="example_set.slug")  # its name in the API
    label_set = serializers.CharField(source="label_set.slug",
                                      help_text="where the candidates go")
    status = serializers.CharField(help_text="queued | running | done | failed")
    failure_reason = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username")
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(source="finished_at", allow_null=True)
    submission_ids = serializers.SerializerMethodField()
    config = serializers.JSONField()
    candidates_created = serializers.IntegerField()
    url = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_submission_ids(self, audit: Audit) -> list[int]:
        return sorted(s.pk for s in audit.submissions.all())

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field(serializers.URLField(help_text="the audit in this API"))
    def get_url(self, audit: Audit) -> str:
        return self._absolute(reverse("api-audit-detail", args=[audit.pk]))

    @extend_schema_field(serializers.URLField(help_text="the audit's report page"))
    def get_page(self, audit: Audit) -> str:
        return self._absolute(reverse("audit_detail", args=[audit.pk]))


class AuditDetailOutput(AuditOutput):
    summary = serializers.SerializerMethodField()
    evidence = serializers.SerializerMethodField()

    @extend_schema_field(AuditSummaryOutput)
    def get_summary(self, audit: Audit) -> dict[str, Any]:
        return AuditSummaryOutput(audit_summary(audit)).data

    @extend_schema_field(serializers.ListField(
        child=serializers.DictField(),
        help_text=f"the first {REPORT_EVIDENCE} flags, most likely errors first: index, "
                  "rank, given_label, suggested_label and the method's figures"))
    def get_evidence(self, audit: Audit) -> list[dict[str, Any]]:
        return list((audit.result or {}).get("evidence", [])[:REPORT_EVIDENCE])
