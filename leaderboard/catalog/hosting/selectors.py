"""Reads of uploaded bundles: the list and one upload."""

from __future__ import annotations

from django.db.models import QuerySet

from leaderboard.catalog.models import BundleUpload


def bundle_upload_list() -> QuerySet[BundleUpload]:
    """Every upload, newest first, with its uploader."""
    return BundleUpload.objects.select_related("uploaded_by").order_by("-created", "-id")


def bundle_upload_get(*, upload_id: int) -> BundleUpload:
    """One upload; raises BundleUpload.DoesNotExist."""
    return BundleUpload.objects.select_related("uploaded_by").get(id=upload_id)
