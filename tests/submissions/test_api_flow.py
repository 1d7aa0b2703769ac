"""Submissions end to end through the API and a real Celery worker on the test database."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.catalog.models import LabelSetVersion
from leaderboard.submissions.models import Submission, SubmissionFile
from tests import factories
from tests.api_support import SUBMISSIONS, poll, post_files, top1_accuracy, write_json

# Also on SQLite: the API and a real worker sharing one SQLite file, as under scripts/serve.sh.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sqlite]

MODEL = "resnet_basic_110"


def test_it_scores_a_real_model_submitted_with_a_token(
    loaded: Settings, data_dir: Path, scoring_worker: Path
) -> None:
    factories.user_create("alice")
    token = APIClient().post("/api/auth/token/",
                             {"username": "alice", "password": "a-long-test-password"})
    assert token.status_code == 200
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    paths = factories.cifar10_model_files(data_dir, MODEL)

    created = post_files(client, {s: paths[s] for s in ("cifar10-test", "cifar10.1-v6")},
                         benchmark="cifar10", model_name=MODEL, description="real predictions")

    assert created.status_code == 201, created.content
    submission = Submission.objects.get()
    url = f"http://testserver{SUBMISSIONS}{submission.pk}/"
    assert created.json() == {"id": submission.pk, "status": "queued", "url": url}
    assert created["Location"] == url
    body = poll(client, submission.pk, log=scoring_worker)
    assert body["status"] == "scored", body
    assert (body["benchmark"], body["model_name"], body["owner"]) == ("cifar10", MODEL, "alice")
    assert (body["public"], body["failure_code"], body["failure_reason"]) == (True, None, None)
    assert body["description"] == "real predictions"
    assert body["files"] == [
        {"image_set": row.example_set.slug, "name": row.original_name, "size": row.size,
         "sha256": row.sha256}
        for row in SubmissionFile.objects.filter(submission=submission).order_by("id")]
    assert sorted(f["name"] for f in body["files"]) == sorted(
        paths[s].name for s in ("cifar10-test", "cifar10.1-v6"))
    assert sorted(body["scores"]) == ["cifar10.1-v6", "cifar10h", "corrected", "original"]
    original = body["scores"]["original"]
    accuracy, correct, total = top1_accuracy(data_dir, MODEL, "cifar10-test")
    assert (original["accuracy"], original["correct"], original["total"]) == (
        accuracy, correct, total)
    assert original["ci_low"] < accuracy < original["ci_high"]
    version = LabelSetVersion.objects.get(label_set__benchmark__slug="cifar10",
                                          label_set__slug="original", number=1)
    assert (original["version"], original["version_hash"]) == (1, version.content_hash)
    new = body["scores"]["cifar10.1-v6"]
    new_accuracy = top1_accuracy(data_dir, MODEL, "cifar10.1-v6")[0]
    assert new["accuracy"] == new_accuracy
    assert new["gap"] == accuracy - new_accuracy


def test_it_fails_a_file_with_a_class_out_of_range_and_says_which_row(
    loaded: Settings, data_dir: Path, scoring_worker: Path, tmp_path: Path
) -> None:
    # a file over the in-request check's size is accepted, and the worker's parse refuses it
    loaded.EVALSERVER_INLINE_CHECK_BYTES = loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 0
    client = APIClient()
    client.force_authenticate(factories.user_create("alice"))
    preds = [3] * 10_000
    preds[17] = 10

    created = post_files(client, {"cifar10-test": write_json(tmp_path / "bad.json", preds)},
                         benchmark="cifar10", model_name="bad")

    assert created.status_code == 201, created.content
    assert created.json()["status"] == "queued"
    body = poll(client, created.json()["id"], log=scoring_worker)
    assert body["status"] == "failed"
    assert body["failure_code"] == "class_out_of_range"
    assert body["failure_reason"] == (
        "cifar10-test: row 17 (0-based) has class id 10; ids must be in 0..9")
    assert body["scores"] == {}
