"""POST /api/submissions/ refusals: each answers the one error shape and stores nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.submissions.models import Submission, SubmissionFile
from tests import factories
from tests.api_support import SUBMISSIONS, post_files, token_client

pytestmark = pytest.mark.django_db

MODEL = "resnet_basic_110"


@pytest.fixture
def client(loaded: Settings) -> APIClient:
    return token_client(factories.user_create("alice"))


@pytest.fixture
def predictions_file(data_dir: Path) -> Path:
    return factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]


def _nothing_stored() -> bool:
    return (not Submission.objects.exists() and not SubmissionFile.objects.exists()
            and not default_storage.exists("uploads"))


def test_it_refuses_anonymous_uploads_with_401(loaded: Settings, predictions_file: Path) -> None:
    response = post_files(APIClient(), {"cifar10-test": predictions_file}, benchmark="cifar10",
                          model_name=MODEL)

    assert response.status_code == 401
    assert response.json() == {"error": {
        "code": "not_authenticated", "message": "Authentication credentials were not provided."}}
    assert _nothing_stored()


def test_it_refuses_an_unknown_benchmark(client: APIClient, predictions_file: Path) -> None:
    response = post_files(client, {"cifar10-test": predictions_file}, benchmark="svhn",
                          model_name=MODEL)

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_benchmark",
        "message": "benchmark: no benchmark 'svhn'; use one of: 20news, caltech256, cifar10, "
                   "cifar100, imagenet, imdb, mnist",
        "field": "benchmark"}}
    assert _nothing_stored()


def test_it_documents_the_benchmark_as_a_slug_and_refuses_a_slug_naming_none(
        client: APIClient, predictions_file: Path) -> None:
    schema = client.get("/api/schema/", {"format": "json"}).json()
    body = schema["components"]["schemas"]["SubmissionCreateRequest"]["properties"]

    assert body["benchmark"] == {
        "type": "string", "minLength": 1, "maxLength": 64,
        "pattern": "^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$",
        "description": "benchmark slug, e.g. `cifar10`"}
    # Benchmarks are data: a well-formed slug naming none is schema-valid, and refused
    response = post_files(client, {"cifar10-test": predictions_file}, benchmark="0",
                          model_name=MODEL)
    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_benchmark",
        "message": "benchmark: no benchmark '0'; use one of: 20news, caltech256, cifar10, "
                   "cifar100, imagenet, imdb, mnist",
        "field": "benchmark"}}
    assert _nothing_stored()


def test_it_takes_the_file_names_from_the_chosen_benchmarks_example_sets(
    client: APIClient, predictions_file: Path
) -> None:
    response = post_files(client, {"cifar10-test": predictions_file}, benchmark="cifar100",
                          model_name=MODEL)

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_image_set", "field": "cifar10-test",
        "message": "'cifar10-test' is not an example set of cifar100; use cifar100-test"}}
    assert _nothing_stored()


def test_it_refuses_a_missing_benchmark(client: APIClient, predictions_file: Path) -> None:
    response = post_files(client, {"cifar10-test": predictions_file}, model_name=MODEL)

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "missing_benchmark", "message": "benchmark: name the benchmark (e.g. cifar10)",
        "field": "benchmark"}}


def test_it_refuses_a_file_for_an_unknown_example_set(
    client: APIClient, predictions_file: Path
) -> None:
    files = {"cifar10-test": predictions_file, "cifar10-train": predictions_file}
    response = post_files(client, files, benchmark="cifar10", model_name=MODEL)

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unknown_image_set",
        "message": "'cifar10-train' is not an example set of cifar10; use cifar10-test, "
                   "cifar10.1-v4, cifar10.1-v6",
        "field": "cifar10-train"}}
    assert _nothing_stored()


@pytest.mark.parametrize("model_name", [None, "", "   "])
def test_it_refuses_a_missing_model_name(client: APIClient, predictions_file: Path,
                                         model_name: str | None) -> None:
    fields = {"benchmark": "cifar10"}
    if model_name is not None:
        fields["model_name"] = model_name

    response = post_files(client, {"cifar10-test": predictions_file}, **fields)

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "missing_model_name", "message": "model_name: name the model",
        "field": "model_name"}}
    assert _nothing_stored()


def test_it_refuses_a_submission_without_the_main_example_set(
    client: APIClient, data_dir: Path
) -> None:
    v6 = factories.cifar10_model_files(data_dir, MODEL)["cifar10.1-v6"]

    response = post_files(client, {"cifar10.1-v6": v6}, benchmark="cifar10", model_name=MODEL)

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "missing_main_image_set",
        "message": "a cifar10 submission needs predictions for cifar10-test",
        "field": "cifar10-test"}}
    assert _nothing_stored()


def test_it_refuses_a_submission_without_files(client: APIClient) -> None:
    response = client.post(SUBMISSIONS, {"benchmark": "cifar10", "model_name": MODEL})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "no_files"


def test_it_refuses_an_unsupported_extension(client: APIClient, tmp_path: Path) -> None:
    text = tmp_path / "preds.txt"
    text.write_text("3\n" * 10_000)

    response = post_files(client, {"cifar10-test": text}, benchmark="cifar10", model_name=MODEL)

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "unsupported_format",
        "message": "'preds.txt': use one of .npy, .npz, .json, .csv",
        "field": "cifar10-test"}}
    assert _nothing_stored()


def test_it_refuses_a_bad_url(client: APIClient, predictions_file: Path) -> None:
    response = post_files(client, {"cifar10-test": predictions_file}, benchmark="cifar10",
                          model_name=MODEL, paper_url="not a url")

    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid_input",
                                         "message": "paper_url: Enter a valid URL.",
                                         "field": "paper_url"}}


def test_it_refuses_over_the_daily_quota_with_429(client: APIClient, loaded: Settings,
                                                  predictions_file: Path) -> None:
    loaded.EVALSERVER_DAILY_QUOTA = 1
    first = post_files(client, {"cifar10-test": predictions_file}, benchmark="cifar10",
                       model_name=MODEL)
    assert first.status_code == 201

    second = post_files(client, {"cifar10-test": predictions_file}, benchmark="cifar10",
                        model_name="another")

    assert second.status_code == 429
    assert second.json() == {"error": {
        "code": "quota_exceeded",
        "message": "daily quota reached: 1 submissions per 24 hours on cifar10; "
                   "try again later"}}
    assert list(Submission.objects.values_list("model_name", flat=True)) == [MODEL]
    assert SubmissionFile.objects.count() == 1


def test_it_refuses_a_file_over_the_size_cap_with_413_and_keeps_nothing(
    client: APIClient, loaded: Settings, tmp_path: Path
) -> None:
    loaded.EVALSERVER_MAX_UPLOAD_BYTES = 1000
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"3," * 2498 + b"33]")
    assert big.stat().st_size == 5000

    response = post_files(client, {"cifar10-test": big}, benchmark="cifar10", model_name=MODEL)

    assert response.status_code == 413
    assert response.json() == {"error": {
        "code": "file_too_large",
        "message": "'cifar10-test' is larger than the upload limit of 1000 bytes",
        "field": "cifar10-test"}}
    assert _nothing_stored()
    assert not (Path(loaded.MEDIA_ROOT) / "uploads").exists()


def test_it_refuses_a_body_declared_far_over_the_cap_before_reading_it(
    client: APIClient, loaded: Settings, tmp_path: Path
) -> None:
    loaded.EVALSERVER_MAX_UPLOAD_BYTES = 1000
    big = tmp_path / "big.npy"
    big.write_bytes(b"\0" * 1_100_000)

    response = post_files(client, {"cifar10-test": big}, benchmark="cifar10", model_name=MODEL)

    assert response.status_code == 413
    assert response.json() == {"error": {
        "code": "file_too_large",
        "message": "the request body is larger than the upload limit of 1000 bytes"}}
    assert _nothing_stored()
    assert not (Path(loaded.MEDIA_ROOT) / "uploads").exists()


def test_it_refuses_two_files_for_one_example_set(client: APIClient,
                                                  predictions_file: Path) -> None:
    with predictions_file.open("rb") as one, predictions_file.open("rb") as two:
        response = client.post(SUBMISSIONS, {"benchmark": "cifar10", "model_name": MODEL,
                                             "cifar10-test": [one, two]}, format="multipart")

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "duplicate_file",
        "message": "one file per example set: 'cifar10-test' came more than once",
        "field": "cifar10-test"}}
    assert _nothing_stored()
