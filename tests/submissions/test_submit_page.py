"""The submit page: a plain POST and the upload script's JSON answers; errors on the form,
nothing stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission, SubmissionFile
from tests import factories
from tests.pages import fields_with_errors
from tests.scored_models import submit_model

pytestmark = pytest.mark.django_db

JSON = {"Accept": "application/json"}


def _form(data_dir: Path, model: str = "resnet_basic_110",
          files: dict[str, SimpleUploadedFile] | None = None) -> dict[str, Any]:
    """The submit form filled in; by default with the model's real cifar10-test file."""
    paths = factories.cifar10_model_files(data_dir, model)
    if files is None:
        files = {"cifar10-test": factories.upload_from_path(paths["cifar10-test"])}
    return {"benchmark": "cifar10", "model_name": model, "description": "a test", "public": "on",
            **files}


def _nothing_stored() -> bool:
    return (not Submission.objects.exists() and not SubmissionFile.objects.exists()
            and not default_storage.exists("uploads"))


@pytest.fixture
def alice(client: Client, loaded: Settings) -> Client:
    client.force_login(factories.user_create("alice"))
    return client


def test_it_renders_every_benchmarks_inputs_labelled(alice: Client) -> None:
    response = alice.get("/submit/?benchmark=cifar10")

    assert response.status_code == 200
    page = response.content.decode()
    for benchmark, example_sets in (("cifar10", ("cifar10-test", "cifar10.1-v4", "cifar10.1-v6")),
                                  ("mnist", ("mnist-test",))):
        assert f'<div class="file-group" data-benchmark="{benchmark}"' in page
        for slug in example_sets:
            assert f'type="file" name="{slug}"' in page
    assert "cifar10-test · 10,000 rows · required" in page
    assert "cifar10.1-v6 · 2,000 rows · optional" in page
    assert '<option value="cifar10" selected>CIFAR-10 (cifar10)</option>' in page
    assert 'id="id_public" checked>' in page
    assert "one row per example, in the example set's canonical order" in page
    assert "leaderboard/submit.js" in page


def test_it_stores_a_plain_post_and_redirects_to_the_status_page(
    alice: Client, data_dir: Path
) -> None:
    response = alice.post("/submit/", _form(data_dir))

    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/submissions/{submission.pk}/"
    assert (submission.model_name, submission.public, submission.status) == (
        "resnet_basic_110", True, "queued")
    assert list(submission.files.values_list("example_set__slug", flat=True)) == ["cifar10-test"]


def test_it_answers_the_upload_script_with_json(alice: Client, data_dir: Path) -> None:
    form = _form(data_dir)
    del form["public"]  # unticked

    response = alice.post("/submit/", form, headers=JSON)

    submission = Submission.objects.get()
    assert response.status_code == 201
    assert response.json() == {"id": submission.pk, "status": "queued",
                               "url": f"/submissions/{submission.pk}/"}
    assert submission.public is False


def test_it_shows_a_missing_main_example_set_on_its_field(alice: Client, data_dir: Path) -> None:
    v6 = factories.cifar10_model_files(data_dir, "resnet_basic_110")["cifar10.1-v6"]
    form = _form(data_dir, files={"cifar10.1-v6": factories.upload_from_path(v6)})

    response = alice.post("/submit/", form)

    assert response.status_code == 400
    page = response.content.decode()
    assert "a cifar10 submission needs predictions for cifar10-test" in page
    assert fields_with_errors(page) == ["cifar10-test"]
    assert 'value="resnet_basic_110"' in page  # what was typed is kept
    assert _nothing_stored()


def test_it_shows_a_bad_extension_on_its_field(alice: Client, data_dir: Path) -> None:
    def bad() -> SimpleUploadedFile:
        return SimpleUploadedFile("preds.txt", b"1\n2\n")

    page = alice.post("/submit/", _form(data_dir, files={"cifar10-test": bad()}))
    as_json = alice.post("/submit/", _form(data_dir, files={"cifar10-test": bad()}), headers=JSON)

    assert page.status_code == 400
    text = page.content.decode()
    assert "&#x27;preds.txt&#x27;: use one of .npy, .npz, .json, .csv" in text
    assert fields_with_errors(text) == ["cifar10-test"]
    assert as_json.status_code == 400
    assert as_json.json() == {"errors": [
        {"field": "cifar10-test", "message": "'preds.txt': use one of .npy, .npz, .json, .csv"}]}
    assert _nothing_stored()


def test_it_shows_plain_field_errors(alice: Client, data_dir: Path) -> None:
    form = _form(data_dir)
    form.update(model_name="", paper_url="not a url")

    response = alice.post("/submit/", form, headers=JSON)

    assert response.status_code == 400
    assert response.json() == {"errors": [
        {"field": "model_name", "message": "name the model"},
        {"field": "paper_url", "message": "enter a full web address (https://…)"}]}
    assert _nothing_stored()


def test_it_refuses_a_file_for_another_benchmark(alice: Client, data_dir: Path) -> None:
    form = _form(data_dir)
    form["mnist-test"] = factories.upload_json([1] * 10_000)

    response = alice.post("/submit/", form)

    assert response.status_code == 400
    page = response.content.decode()
    assert ("mnist-test belongs to mnist, not cifar10: remove this file or choose mnist"
            in page)
    assert fields_with_errors(page) == ["mnist-test"]
    assert _nothing_stored()


def test_it_shows_a_too_large_upload_on_its_field(
    alice: Client, data_dir: Path, loaded: Settings
) -> None:
    loaded.EVALSERVER_MAX_UPLOAD_BYTES = 1000
    big = SimpleUploadedFile("preds.json", json.dumps([3] * 10_000).encode())

    response = alice.post("/submit/", _form(data_dir, files={"cifar10-test": big}))

    assert response.status_code == 413
    page = response.content.decode()
    assert "cifar10-test is larger than the limit of 1,000 bytes: nothing was stored" in page
    assert fields_with_errors(page) == ["cifar10-test"]
    assert _nothing_stored()


def test_it_answers_an_upload_refused_unread_with_the_form_not_a_csrf_error(
    loaded: Settings, data_dir: Path
) -> None:
    """A body far over the cap is refused before its CSRF token is read: the page says why."""
    loaded.EVALSERVER_MAX_UPLOAD_BYTES = 1000
    client = Client(enforce_csrf_checks=True)
    client.force_login(factories.user_create("alice"))
    big = SimpleUploadedFile("preds.npy", b"\0" * (1_048_576 + 2000))

    response = client.post("/submit/", _form(data_dir, files={"cifar10-test": big}))

    assert response.status_code == 413
    assert ("the upload (all files together) is larger than the limit of 1,000 bytes"
            in response.content.decode())
    assert _nothing_stored()


def test_it_checks_csrf_on_a_normal_upload(loaded: Settings, data_dir: Path) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(factories.user_create("alice"))

    refused = client.post("/submit/", _form(data_dir))
    token = client.get("/submit/").cookies["csrftoken"].value
    accepted = client.post("/submit/", {**_form(data_dir), "csrfmiddlewaretoken": token})

    assert refused.status_code == 403
    assert accepted.status_code == 302
    assert Submission.objects.count() == 1


def test_it_shows_the_quota_and_refuses_over_it(
    alice: Client, data_dir: Path, loaded: Settings
) -> None:
    loaded.EVALSERVER_DAILY_QUOTA = 1
    alice_user = User.objects.get(username="alice")
    submit_model(data_dir, "resnet_basic_110", owner=alice_user)
    assert ("0 of 1 submissions left on cifar10 (the quota counts those of the last 24 hours)."
            in alice.get("/submit/").content.decode())

    response = alice.post("/submit/", _form(data_dir, "vgg16_keras"))

    assert response.status_code == 429
    page = response.content.decode()
    assert ("daily quota reached: 1 submissions per 24 hours on cifar10; try again later"
            in page)
    assert fields_with_errors(page) == []
    assert Submission.objects.count() == 1 and SubmissionFile.objects.count() == 3
