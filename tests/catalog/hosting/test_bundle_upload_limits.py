"""Security issue 37, item 3, as it was reported: a staff upload of a 740-byte bundle whose
manifest holds one dotted key of 300,000 parts drove a worker's pool process to 22.5 GB until
the kernel killed it, and the upload ended `worker_lost`. Through the API and a real Celery
worker, it now fails `bad_toml` naming the limit; the same worker then adds a good bundle,
whose manifest it parses in a forked child under a memory limit (docs/bundles.md §1)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from leaderboard.catalog.models import Benchmark, BundleUpload
from tests import factories
from tests.catalog.toy_bundle import SLUG, toy_zip
from tests.workers.scoring.bundles.bundle_files import zip_bytes


def _client(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _finished(upload_id: int, log: Path, timeout: float = 120) -> BundleUpload:
    """The upload once the worker has finished with it (the deadline only bounds a hang)."""
    deadline = time.monotonic() + timeout
    while True:
        upload = BundleUpload.objects.get(id=upload_id)
        if not upload.pending:
            return upload
        if time.monotonic() > deadline:
            pytest.fail(f"bundle upload {upload_id} still {upload.status}\n{log.read_text()}")
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_it_fails_the_740_byte_bundle_by_its_limit_and_the_worker_adds_the_next(
    scoring_worker: Path, tmp_path: Path,
) -> None:
    staff = _client(factories.host_create("boss"))
    huge = tmp_path / "huge-key.zip"
    huge.write_bytes(zip_bytes({"toy3/toy3.toml": b"a" + b".a" * 299_999 + b" = 1\n"}))
    assert huge.stat().st_size == 736
    with open(huge, "rb") as handle:
        refused = staff.post("/api/bundles/", {"bundle": handle}, format="multipart")
    assert refused.status_code == 202

    assert _finished(refused.json()["id"], scoring_worker).status == "failed"
    assert staff.get(refused.json()["url"]).json()["error"] == {
        "code": "bad_toml",
        "message": "line 1: longer than 65,536 characters, the most a manifest's line may have "
                   "(an array may span lines)",
        "file": "toy3.toml", "field": ""}

    with open(toy_zip(tmp_path / "good"), "rb") as handle:
        added = staff.post("/api/bundles/", {"bundle": handle}, format="multipart")
    upload = _finished(added.json()["id"], scoring_worker)
    assert (upload.status, upload.benchmark_slug) == ("done", SLUG)
    assert list(Benchmark.objects.values_list("slug", flat=True)) == [SLUG]
