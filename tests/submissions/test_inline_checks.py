"""Prediction files small enough to parse in the request are checked there: a bad one is
refused at once (400, the parser's code, the file's field, its row and column) by the API, the
submit page and so the command-line client, and nothing is stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.html import escape
from pytest_django.fixtures import Settings

from leaderboard.submissions.file_checks import inline_check_limit
from leaderboard.submissions.models import Submission, SubmissionFile
from tests import factories
from tests.api_support import post_files, token_client
from tests.pages import fields_with_errors

pytestmark = pytest.mark.django_db


def _media() -> set[str]:
    """Every file under MEDIA_ROOT (the compiled label sets are there too)."""
    root = Path(settings.MEDIA_ROOT)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _wrong_shape(tmp: Path) -> Path:
    path = tmp / "scores.npy"
    np.save(path, np.zeros((10_000, 9), dtype=np.float32))  # CIFAR-10 has 10 classes
    return path


def _wrong_dtype(tmp: Path) -> Path:
    path = tmp / "flags.npy"
    np.save(path, np.ones(10_000, dtype=bool))
    return path


def _malformed(tmp: Path) -> Path:
    path = tmp / "broken.npy"
    path.write_bytes(b"this is not numpy")
    return path


def _out_of_range(tmp: Path) -> Path:
    ids = [3] * 10_000
    ids[17] = 10
    path = tmp / "ids.json"
    path.write_text(json.dumps(ids))
    return path


def _not_finite(tmp: Path) -> Path:
    scores = np.full((10_000, 10), 0.1, dtype=np.float32)
    scores[5, 3] = np.nan
    path = tmp / "scores.npy"
    np.save(path, scores)
    return path


def _not_a_number(tmp: Path) -> Path:
    path = tmp / "ids.csv"
    path.write_text("\n".join(["1"] * 41 + ["x"] + ["1"] * 9958) + "\n")
    return path


# (file, code, message, row and column): the parser's words, prefixed with the example set
CASES = {
    "wrong_shape": (_wrong_shape, "wrong_shape",
                    "cifar10-test: the .npy file is a score matrix with 9 columns; expected one "
                    "column per class, num_classes = 10", {}),
    "wrong_dtype": (_wrong_dtype, "wrong_dtype",
                    "cifar10-test: the .npy file holds true/false values (dtype bool); expected "
                    "integer class ids or floating-point scores", {}),
    "malformed": (_malformed, "corrupt_file",
                  "cifar10-test: the .npy file is not a valid .npy file", {}),
    "out_of_range": (_out_of_range, "class_out_of_range",
                     "cifar10-test: row 17 (0-based) has class id 10; ids must be in 0..9",
                     {"row": 17, "column": 0}),
    "not_finite": (_not_finite, "not_finite",
                   "cifar10-test: row 5 (0-based) has the value nan in column 3, which is not "
                   "finite; all scores must be finite", {"row": 5, "column": 3}),
    "not_a_number": (_not_a_number, "not_a_number",
                     "cifar10-test: line 42, column 1: 'x' is not a number (cells must be "
                     "comma-separated numbers)", {"row": 41, "column": 0}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_it_refuses_a_bad_file_through_the_api_with_400_and_stores_nothing(
    loaded: Settings, tmp_path: Path, case: str
) -> None:
    make, code, message, where = CASES[case]
    client = token_client(factories.user_create("alice"))
    media = _media()

    response = post_files(client, {"cifar10-test": make(tmp_path)}, benchmark="cifar10",
                          model_name="bad")

    assert response.status_code == 400
    assert response.json() == {"error": {"code": code, "message": message,
                                         "field": "cifar10-test", **where}}
    assert not Submission.objects.exists() and not SubmissionFile.objects.exists()
    assert _media() == media


def test_it_checks_a_large_upload_from_its_temporary_file(loaded: Settings,
                                                          tmp_path: Path) -> None:
    # ImageNet top-8 ids as int64: 3.2 MB, past FILE_UPLOAD_MAX_MEMORY_SIZE, so Django keeps
    # the upload in a temporary file; the last id of the last row is out of range
    ids = np.tile(np.arange(8, dtype=np.int64), (50_000, 1))
    ids[49_999, 7] = 1000
    path = tmp_path / "top8.npy"
    np.save(path, ids)
    assert path.stat().st_size > settings.FILE_UPLOAD_MAX_MEMORY_SIZE
    media = _media()

    response = post_files(token_client(factories.user_create("alice")), {"imagenet-val": path},
                          benchmark="imagenet", model_name="top8")

    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": "class_out_of_range",
        "message": "imagenet-val: row 49999 (0-based) has class id 1000 at position 7 of its "
                   "top-8; ids must be in 0..999",
        "field": "imagenet-val", "row": 49_999, "column": 7}}
    assert not Submission.objects.exists() and _media() == media


def test_it_leaves_a_file_over_the_limit_to_the_worker(loaded: Settings,
                                                       tmp_path: Path) -> None:
    bad = _out_of_range(tmp_path)
    loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = bad.stat().st_size - 1

    response = post_files(token_client(factories.user_create("alice")), {"cifar10-test": bad},
                          benchmark="cifar10", model_name="bad")

    assert response.status_code == 201
    assert response.json()["status"] == "queued"
    assert Submission.objects.get().files.get().size == bad.stat().st_size


@pytest.mark.parametrize("case", list(CASES))
def test_it_refuses_a_bad_file_on_the_submit_page(client: Client, loaded: Settings,
                                                  tmp_path: Path, case: str) -> None:
    make, _, message, _ = CASES[case]
    client.force_login(factories.user_create("alice"))
    path = make(tmp_path)

    def form() -> dict[str, Any]:
        return {"benchmark": "cifar10", "model_name": "bad", "public": "on",
                "cifar10-test": SimpleUploadedFile(path.name, path.read_bytes())}

    media = _media()
    page = client.post("/submit/", form())
    as_json = client.post("/submit/", form(), headers={"Accept": "application/json"})

    assert page.status_code == 400
    text = page.content.decode()
    assert escape(message) in text
    assert fields_with_errors(text) == ["cifar10-test"]
    assert as_json.status_code == 400
    assert as_json.json() == {"errors": [{"field": "cifar10-test", "message": message}]}
    assert not Submission.objects.exists() and _media() == media


@pytest.mark.parametrize(("name", "compress", "limit"), [
    ("scores.npy", False, "EVALSERVER_INLINE_CHECK_BYTES"),
    ("scores.npz", False, "EVALSERVER_INLINE_CHECK_BYTES"),
    ("scores.npz", True, "EVALSERVER_INLINE_CHECK_TEXT_BYTES"),
    ("scores.json", False, "EVALSERVER_INLINE_CHECK_TEXT_BYTES"),
    ("scores.csv", False, "EVALSERVER_INLINE_CHECK_TEXT_BYTES"),
])
def test_it_gives_text_and_compressed_files_the_smaller_limit(
    settings: Settings, tmp_path: Path, name: str, compress: bool, limit: str
) -> None:
    settings.EVALSERVER_INLINE_CHECK_BYTES, settings.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 300, 20
    path = tmp_path / name
    scores = np.zeros((10, 10), dtype=np.float32)
    if name.endswith(".npz"):
        (np.savez_compressed if compress else np.savez)(path, scores=scores)
    elif name.endswith(".npy"):
        np.save(path, scores)
    else:
        path.write_text("0")

    assert inline_check_limit(path=path, suffix=path.suffix) == {
        "EVALSERVER_INLINE_CHECK_BYTES": 300, "EVALSERVER_INLINE_CHECK_TEXT_BYTES": 20}[limit]


def test_it_accepts_a_good_file_after_checking_it(loaded: Settings, data_dir: Path) -> None:
    real = factories.cifar10_model_files(data_dir, "resnet_basic_110")["cifar10-test"]

    response = post_files(token_client(factories.user_create("alice")), {"cifar10-test": real},
                          benchmark="cifar10", model_name="resnet_basic_110")

    assert response.status_code == 201
    stored = Submission.objects.get().files.get()
    assert stored.file.read() == real.read_bytes()  # the check left the upload whole

