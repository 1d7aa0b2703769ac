"""`evalserver-client check` against a live server: real CIFAR-10 prediction files pass, the
usual mistakes made of them are named as the server names them when the same file is uploaded
(the same code and message), and nothing is uploaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from leaderboard.submissions.models import Submission
from tests import factories
from tests.clients.test_cli import run_client

MODEL = "resnet_basic_110"


def _ids(data_dir: Path) -> list[int]:
    path = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]
    ids: list[int] = json.loads(path.read_text())
    return ids


def _probabilities(data_dir: Path) -> np.ndarray:
    return np.load(data_dir / "cifar10" / "cleanlab_cv_probabilities.npy")


def _save(path: Path, array: np.ndarray) -> Path:
    np.save(path, array, allow_pickle=False)
    return path


def _broken(data_dir: Path, folder: Path) -> dict[str, Path]:
    """The usual mistakes, made of a real model's files: (the server's code) -> file."""
    ids, probabilities = _ids(data_dir), _probabilities(data_dir)
    with_nan = probabilities.copy()
    with_nan[17, 3] = np.nan
    out_of_range = list(ids)
    out_of_range[4242] = 10
    not_npy = folder / "preds.npy"
    not_npy.write_text(json.dumps(ids))  # JSON saved under the name of a .npy
    return {
        "wrong_row_count": _save(folder / "short.npy", np.array(ids[:9_999])),
        "wrong_shape": _save(folder / "nine.npy", probabilities[:, :9]),
        "not_finite": _save(folder / "nan.npy", with_nan),
        "wrong_dtype": _save(folder / "floats.npy", np.array(ids, dtype=np.float32)),
        "corrupt_file": not_npy,
        "class_out_of_range": _write_json(folder / "range.json", out_of_range),
    }


def _write_json(path: Path, values: Any) -> Path:
    path.write_text(json.dumps(values))
    return path


def _uploaded(url: str, token: str, path: Path) -> dict[str, Any]:
    """The server's answer to the file uploaded as a cifar10 submission (a refusal: 400)."""
    with open(path, "rb") as handle:
        answer = requests.post(f"{url}/api/submissions/", timeout=60,
                               headers={"Authorization": f"Token {token}"},
                               data={"benchmark": "cifar10", "model_name": "m"},
                               files={"cifar10-test": (path.name, handle)})
    assert answer.status_code == 400, answer.text
    error: dict[str, Any] = answer.json()["error"]
    return error


@pytest.mark.django_db(transaction=True)
def test_it_accepts_real_files_and_says_how_to_submit_them(
    loaded: Settings, data_dir: Path, live_server: LiveServer, tmp_path: Path
) -> None:
    files = factories.cifar10_model_files(data_dir, MODEL)
    scores = _save(tmp_path / "v6_scores.npy", np.eye(10, dtype=np.float32)[
        json.loads(files["cifar10.1-v6"].read_text())])

    done = run_client("check", "--benchmark", "cifar10", str(files["cifar10-test"]),
                      f"cifar10.1-v6={scores}", url=live_server.url)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"cifar10-test={files['cifar10-test']}: ok, 10000 rows of top-1 class ids "
        "(int64, .json)",
        f"cifar10.1-v6={scores}: ok, 2000 rows of scores over 10 classes (float32, .npy): the "
        "top-5 is taken from them",
        f"{live_server.url} would accept these files; submit them with",
        f"  evalserver-client submit --benchmark cifar10 --model NAME "
        f"cifar10-test={files['cifar10-test']} cifar10.1-v6={scores}",
    ]
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_names_each_problem_as_the_server_refuses_the_file(
    loaded: Settings, data_dir: Path, live_server: LiveServer, tmp_path: Path
) -> None:
    token = str(Token.objects.create(user=factories.user_create("alice")).key)
    broken = _broken(data_dir, tmp_path)

    for code, path in broken.items():
        done = run_client("check", "--benchmark", "cifar10", "--json", str(path),
                          url=live_server.url)
        server = _uploaded(live_server.url, token, path)

        assert done.returncode == 1, done.stderr
        (verdict,) = json.loads(done.stdout)["files"]
        assert (verdict["code"], verdict["message"]) == (code, server["message"]), path
        assert (verdict["row"], verdict["column"]) == (server.get("row"), server.get("column"))
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_prints_every_problem_of_a_submission(
    loaded: Settings, data_dir: Path, live_server: LiveServer, tmp_path: Path
) -> None:
    broken = _broken(data_dir, tmp_path)
    v6 = factories.cifar10_model_files(data_dir, MODEL)["cifar10.1-v6"]
    text = tmp_path / "v4.txt"
    text.write_text("3\n")

    done = run_client("check", "--benchmark", "cifar10", f"cifar10.1-v6={v6}",
                      f"cifar10.1-v4={broken['wrong_row_count']}", f"cifar10.1-v4-x={v6}",
                      f"cifar10-test={text}", url=live_server.url)
    twice = run_client("check", "--benchmark", "cifar10", f"cifar10.1-v6={v6}",
                       f"cifar10.1-v6={v6}", url=live_server.url)
    mnist = run_client("check", "--benchmark", "mnist", str(broken["not_finite"]),
                       url=live_server.url)

    assert (twice.returncode, twice.stderr) == (
        2, "error: two files for cifar10.1-v6: give one file per example set\n")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f"cifar10.1-v6={v6}: ok, 2000 rows of top-1 class ids (int64, .json)",
        f"cifar10.1-v4={broken['wrong_row_count']}: wrong_row_count: the .npy file has 9999 "
        "rows; expected 2021 (one per example, in the benchmark's order)",
        f"cifar10.1-v4-x={v6}: unknown_image_set: 'cifar10.1-v4-x' is not an example set of "
        "cifar10; use cifar10-test, cifar10.1-v4, cifar10.1-v6",
        f"cifar10-test={text}: unsupported_format: 'v4.txt': use one of .npy, .npz, .json, .csv",
        f"{live_server.url} would refuse this submission: 3 of 4 files refused",
    ]
    assert mnist.returncode == 1
    assert mnist.stdout.splitlines() == [
        f"mnist-test={broken['not_finite']}: not_finite: row 17 (0-based) has the value nan in "
        "column 3, which is not finite; all scores must be finite",
        f"{live_server.url} would refuse this submission: 1 of 1 file refused",
    ]


@pytest.mark.django_db(transaction=True)
def test_it_says_a_submission_needs_its_main_example_set(
    loaded: Settings, data_dir: Path, live_server: LiveServer
) -> None:
    v6 = factories.cifar10_model_files(data_dir, MODEL)["cifar10.1-v6"]

    done = run_client("check", "--benchmark", "cifar10", f"cifar10.1-v6={v6}",
                      url=live_server.url)
    unknown = run_client("check", "--benchmark", "svhn", str(v6), url=live_server.url)
    missing = run_client("check", "--benchmark", "cifar10", "no-such-file.npy",
                         url=live_server.url)
    model = run_client("check", "--benchmark", "mnist", f"checkpoint={v6}", url=live_server.url)

    assert (done.returncode, done.stdout.splitlines()) == (1, [
        f"cifar10.1-v6={v6}: ok, 2000 rows of top-1 class ids (int64, .json)",
        "cifar10: missing_main_image_set: a cifar10 submission needs predictions for "
        "cifar10-test",
        f"{live_server.url} would refuse this submission",
    ])
    assert (unknown.returncode, unknown.stderr) == (
        5, "error: not_found: no benchmark 'svhn'; `evalserver-client benchmarks` lists them\n")
    assert (missing.returncode, missing.stderr) == (2, "error: no-such-file.npy: no such file\n")
    assert (model.returncode, model.stderr) == (2, "error: check takes prediction files; the "
                                                   "server checks a checkpoint when it is "
                                                   "submitted\n")
