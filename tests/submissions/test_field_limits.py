"""Every submission field is checked against its database limit before anything is stored
(PostgreSQL refuses an over-long value at insert time, which was a 500; SQLite stored it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission, SubmissionFile
from tests import factories
from tests.api_support import post_files, token_client

pytestmark = pytest.mark.django_db

MODEL = "resnet_basic_110"
LONG_URL = "https://example.org/" + "a" * 181  # 201 characters: one past the column


@pytest.mark.parametrize("field", ["paper_url", "code_url"])
def test_it_refuses_an_url_longer_than_its_column_through_the_api(
        loaded: Settings, data_dir: Path, field: str) -> None:
    assert len(LONG_URL) == 201
    client = token_client(factories.user_create("alice"))
    files = {"cifar10-test": factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]}
    response = post_files(client, files, benchmark="cifar10", model_name=MODEL,
                          **{field: LONG_URL})
    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "max_length", "field": field,
        "message": f"{field}: Ensure this field has no more than 200 characters."}}
    assert not Submission.objects.exists() and not SubmissionFile.objects.exists()
    ok = post_files(client, files, benchmark="cifar10", model_name=MODEL,
                    **{field: LONG_URL[:200]})
    assert ok.status_code == 201


def test_it_refuses_an_url_longer_than_its_column_on_the_submit_page(
        loaded: Settings, data_dir: Path) -> None:
    client = Client()
    client.force_login(factories.user_create("bob"))
    path = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]
    with path.open("rb") as handle:
        page = client.post("/submit/", {"benchmark": "cifar10", "model_name": MODEL,
                                        "paper_url": LONG_URL, "cifar10-test": handle})
    assert page.status_code == 400
    assert "Ensure this value has at most 200 characters (it has 201)." in page.content.decode()
    assert not Submission.objects.exists()
