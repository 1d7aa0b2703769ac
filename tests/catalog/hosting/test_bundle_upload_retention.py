"""A refused bundle's stored archive is kept EVALSERVER_FAILED_FILES_RETENTION_DAYS after it
failed, like a failed submission's files, then removed by the hourly task; the row stays."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from pytest_django.fixtures import Settings

from leaderboard.catalog.hosting.services import (
    bundle_upload_create,
    failed_bundle_upload_files_remove,
)
from leaderboard.catalog.models import BundleUpload
from leaderboard.tasks.cpu import remove_failed_files
from tests import factories
from tests.catalog.toy_bundle import process, toy_zip

pytestmark = pytest.mark.django_db

NOT_A_ZIP = b"PK\x03\x04 not really a zip"  # passes the request's check, refused by the worker


def _upload(tmp_path: Path, name: str, content: bytes | None = None) -> BundleUpload:
    data = toy_zip(tmp_path, name).read_bytes() if content is None else content
    return bundle_upload_create(uploader=factories.host_create(name.removesuffix(".zip")),
                                bundle=SimpleUploadedFile(name, data))


def _finished(upload: BundleUpload, *, days_ago: float) -> BundleUpload:
    BundleUpload.objects.filter(pk=upload.pk).update(
        finished_at=timezone.now() - timedelta(days=days_ago))
    upload.refresh_from_db()
    return upload


def test_it_removes_exactly_the_expired_refused_archives(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    catalog_settings.EVALSERVER_FAILED_FILES_RETENTION_DAYS = 7
    old = _upload(tmp_path, "old.zip", NOT_A_ZIP)
    recent = _upload(tmp_path, "recent.zip", NOT_A_ZIP)
    done = _upload(tmp_path, "done.zip")
    queued = _upload(tmp_path, "queued.zip", NOT_A_ZIP)
    assert [process(u.pk) for u in (old, recent, done)] == ["failed", "failed", "done"]
    old = _finished(old, days_ago=7.01)
    recent = _finished(recent, days_ago=6.99)
    done = _finished(done, days_ago=30)
    old_name = old.bundle.name
    assert old.failure_code == "bad_zip" and default_storage.exists(old_name)

    assert failed_bundle_upload_files_remove() == [old.pk]

    assert not default_storage.exists(old_name)
    old.refresh_from_db()
    # the row stays, with the refusal, its name and size; the empty field says it is gone
    assert (old.status, old.bundle.name, old.original_name, old.failure_code) == (
        "failed", "", "old.zip", "bad_zip")
    for kept in (recent, done, queued):
        kept.refresh_from_db()
        assert kept.bundle.name and default_storage.exists(kept.bundle.name)
    assert failed_bundle_upload_files_remove() == []  # nothing left to do


def test_it_removes_them_from_the_hourly_task(catalog_settings: Settings,
                                              tmp_path: Path) -> None:
    catalog_settings.EVALSERVER_FAILED_FILES_RETENTION_DAYS = 3
    upload = _upload(tmp_path, "refused.zip", NOT_A_ZIP)
    assert process(upload.pk) == "failed"
    name = _finished(upload, days_ago=3.01).bundle.name

    assert remove_failed_files.apply().get() == {"submissions": [],
                                                 "bundle_uploads": [upload.pk]}

    assert not default_storage.exists(name)
    assert remove_failed_files.apply().get() == {"submissions": [], "bundle_uploads": []}
