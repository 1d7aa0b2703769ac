from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from leaderboard.models import Benchmark, ImageSet, LabelSet, LabelSetVersion


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
