from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from leaderboard.audits.models import Audit
from leaderboard.catalog.models import Benchmark, ImageSet, LabelSet, LabelSetVersion
from leaderboard.submissions.models import Score, Submission, SubmissionFile


class ImageSetInline(admin.TabularInline):
    model = ImageSet
    extra = 0
    fields = ("slug", "name", "size")
    show_change_link = True


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "num_classes", "main_image_set", "created")
    search_fields = ("slug", "name")
    readonly_fields = ("created",)
    inlines = (ImageSetInline,)


@admin.register(ImageSet)
class ImageSetAdmin(admin.ModelAdmin):
    list_display = ("slug", "benchmark", "name", "size")
    list_filter = ("benchmark",)
    search_fields = ("slug", "name")


class LabelSetVersionInline(admin.TabularInline):
    """Versions are listed, never added or edited here: they come from services."""

    model = LabelSetVersion
    fk_name = "label_set"
    extra = 0
    fields = ("number", "content_hash", "parent", "author", "created", "note")
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LabelSet)
class LabelSetAdmin(admin.ModelAdmin):
    list_display = ("slug", "benchmark", "image_set", "kind", "family", "name")
    list_filter = ("benchmark", "kind", "family")
    search_fields = ("slug", "name")
    inlines = (LabelSetVersionInline,)


@admin.register(LabelSetVersion)
class LabelSetVersionAdmin(admin.ModelAdmin):
    """Read only: a version is immutable once made (LabelSetVersion.save raises)."""

    list_display = ("label_set", "number", "short_hash", "author", "created")
    list_filter = ("label_set__benchmark", "label_set")
    search_fields = ("content_hash", "note")
    list_select_related = ("label_set", "label_set__benchmark", "author")

    @admin.display(description="content hash")
    def short_hash(self, obj: LabelSetVersion) -> str:
        return obj.content_hash[:12]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class SubmissionFileInline(admin.TabularInline):
    model = SubmissionFile
    extra = 0
    fields = ("image_set", "original_name", "size", "sha256", "file", "compact")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ScoreInline(admin.TabularInline):
    model = Score
    extra = 0
    fields = ("label_set", "label_set_version", "accuracy", "correct", "total", "updated")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    """Status, claims and scores move only through the workers (conditional updates); the
    admin may edit what a person owns: names, description, links and visibility."""

    list_display = ("id", "model_name", "benchmark", "owner", "public", "status", "created")
    list_filter = ("benchmark", "status", "public")
    search_fields = ("model_name", "owner__username")
    list_select_related = ("benchmark", "owner")
    readonly_fields = ("owner", "benchmark", "kind", "status", "failure_code", "failure_reason",
                       "created", "queued_at", "started", "scored", "claimed_by", "attempts")
    inlines = (SubmissionFileInline, ScoreInline)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # submissions come through the form, the API or the client


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    """Read-only: audits are started from /audits/ (or the API) and moved by their task."""

    list_display = ("id", "kind", "benchmark", "status", "created_by", "created",
                    "candidates_created")
    list_filter = ("kind", "benchmark", "status")
    list_select_related = ("benchmark", "created_by")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
