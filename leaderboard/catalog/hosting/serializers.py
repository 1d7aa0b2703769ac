"""Input and output shapes of the bundle upload and benchmark visibility operations."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.catalog.models import BundleUpload


class BundleUploadInput(serializers.Serializer):
    bundle = serializers.FileField(
        allow_empty_file=True,  # refused by the service, as `empty_file`
        help_text="the bundle: a .zip holding one manifest (*.toml) and the files it names "
                  "(docs/bundles.md); at most the upload cap (EVALSERVER_MAX_UPLOAD_BYTES)")
    # The field's public name shadows Serializer.update, which these plain serializers never
    # call (they save nothing).
    update = serializers.BooleanField(  # type: ignore[assignment]
        required=False, default=False,
        help_text="add the bundle's label sets to the existing benchmark of its slug "
                  "(otherwise an existing slug is refused)")
    team = serializers.SlugField(
        required=False, allow_blank=True, default="",
        help_text="the slug of the host team the bundle is for (docs/hosts/teams.md); "
                  "default: the one team you host for")


class BundleUploadCreatedOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(help_text="queued")
    url = serializers.URLField(help_text="poll this for the outcome")


class BundleErrorOutput(serializers.Serializer):
    code = serializers.CharField(help_text="the refusal's code (docs/bundles.md §8), or "
                                           "worker_lost, time_limit, internal_error")
    message = serializers.CharField()
    file = serializers.CharField(help_text="the manifest, data file or zip entry at fault; "
                                           "empty when none")
    field = serializers.CharField(help_text="the manifest field at fault (dotted); empty "
                                            "when none")


class BundleUploadOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    status = serializers.CharField(help_text="queued | running | done | failed")
    file_name = serializers.CharField(source="original_name")
    size = serializers.IntegerField(help_text="bytes")
    update = serializers.BooleanField()  # type: ignore[assignment]  # as in the input
    uploaded_by = serializers.CharField(source="uploaded_by.username")
    team = serializers.CharField(source="team.slug", help_text="the host team it is for")
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(source="finished_at", allow_null=True)
    benchmark = serializers.SerializerMethodField()
    report = serializers.CharField(help_text="once done: what was created or updated, "
                                             "line by line")
    error = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField(
        allow_null=True, help_text="once done: the slug of the benchmark added or updated"))
    def get_benchmark(self, upload: BundleUpload) -> str | None:
        return upload.benchmark_slug or None

    @extend_schema_field(BundleErrorOutput(allow_null=True, help_text="once failed: why"))
    def get_error(self, upload: BundleUpload) -> dict[str, Any] | None:
        if upload.status != BundleUpload.Status.FAILED:
            return None
        return {"code": upload.failure_code or "failed", "message": upload.failure_reason,
                "file": upload.error_file, "field": upload.error_field}

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field(serializers.URLField(help_text="the upload in this API"))
    def get_url(self, upload: BundleUpload) -> str:
        return self._absolute(reverse("api-bundle-upload-detail", args=[upload.pk]))

    @extend_schema_field(serializers.URLField(help_text="the upload's page"))
    def get_page(self, upload: BundleUpload) -> str:
        return self._absolute(reverse("bundle_upload_detail", args=[upload.pk]))


class BenchmarkVisibilityOutput(serializers.Serializer):
    slug = serializers.CharField()
    hidden = serializers.BooleanField(help_text="left out of every public list, board and "
                                                "the submit form")
