"""`python -m leaderboard.client` as a researcher runs it: a subprocess, standard library only
(`python -S`: no site-packages), against a live server and a real scoring worker."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from leaderboard.models import Score, Submission
from tests import factories
from tests.api.support import top1_accuracy, write_json
from tests.helpers import PROJECT_ROOT, free_port

MODEL = "resnet_basic_110"


def run_client(*args: str, url: str, token: str | None = None,
               **env: str) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": os.environ.get("PATH", ""), "EVALSERVER_URL": url, **env}
    if token:
        environment["EVALSERVER_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-S", "-m", "leaderboard.client", *args], cwd=PROJECT_ROOT,
        env=environment, capture_output=True, text=True, timeout=180, check=False)


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def _token(username: str = "alice") -> str:
    return str(Token.objects.create(user=factories.user_create(username)).key)


@pytest.mark.django_db(transaction=True)
def test_it_submits_waits_and_prints_the_scores(
    loaded: Settings, data_dir: Path, scoring_worker: Path, live_server: LiveServer
) -> None:
    token = _token()
    test_file = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]

    done = run_client("submit", "--benchmark", "cifar10", "--model", MODEL,
                      f"cifar10-test={test_file}", url=live_server.url, token=token)

    assert done.returncode == 0, done.stderr + scoring_worker.read_text()
    submission = Submission.objects.get()
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"submission {submission.pk} queued: {live_server.url}/api/submissions/{submission.pk}/",
        f"submission {submission.pk}: {MODEL} on cifar10 - scored",
        "label set  accuracy  correct/total            95% CI",
    ]
    accuracy, correct, total = top1_accuracy(data_dir, MODEL, "cifar10-test")
    score = Score.objects.get(submission=submission, label_set__slug="original")
    original = next(line for line in lines if line.startswith("original "))
    assert original.split() == [
        "original", _percent(accuracy), f"{correct}/{total}",
        f"[{_percent(score.ci_low)},", f"{_percent(score.ci_high)}]"]
    assert [line.split()[0] for line in lines[3:]] == ["original", "corrected", "cifar10h"]
    assert submission.public is True and submission.files.get().size == test_file.stat().st_size

    status = run_client("status", str(submission.pk), url=live_server.url)  # public: no token
    board = run_client("leaderboard", "cifar10", url=live_server.url)

    assert status.returncode == 0 and status.stdout.splitlines() == lines[1:]
    assert board.returncode == 0, board.stderr
    header, row = (line.split() for line in board.stdout.splitlines()[1:3])
    assert header == ["rank", "model", "id", "original", "corrected", "cifar10h",
                      "cifar10.1-v4", "cifar10.1-v6"]
    assert row[:4] == ["1", MODEL, str(submission.pk), _percent(accuracy)]
    assert row[-2:] == ["-", "-"]  # no predictions for the new test sets


@pytest.mark.django_db(transaction=True)
def test_it_exits_1_with_the_reason_when_scoring_fails(
    loaded: Settings, scoring_worker: Path, live_server: LiveServer, tmp_path: Path
) -> None:
    preds = [3] * 10_000
    preds[17] = 10
    bad = write_json(tmp_path / "bad.json", preds)

    done = run_client("submit", "--benchmark", "cifar10", "--model", "bad", "--private",
                      f"cifar10-test={bad}", url=live_server.url, token=_token())

    assert done.returncode == 1
    submission = Submission.objects.get()
    assert submission.public is False
    assert done.stdout.splitlines()[-1] == f"submission {submission.pk}: bad on cifar10 - failed"
    assert done.stderr == ("error: scoring failed: class_out_of_range: cifar10-test: row 17 "
                           "(0-based) has class id 10; ids must be in 0..9\n")


@pytest.mark.django_db(transaction=True)
def test_it_exits_1_with_the_servers_error(loaded: Settings, data_dir: Path,
                                          live_server: LiveServer) -> None:
    test_file = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]

    done = run_client("submit", "--benchmark", "cifar100", "--model", MODEL,
                      f"cifar10-test={test_file}", url=live_server.url, token=_token())

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == ("error: unknown_benchmark: benchmark: no benchmark 'cifar100'; "
                           "use one of: cifar10, imagenet, mnist\n")
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", [5000, 1_100_000])
def test_it_reports_a_file_over_the_size_cap(loaded: Settings, live_server: LiveServer,
                                             tmp_path: Path, size: int) -> None:
    loaded.EVALSERVER_MAX_UPLOAD_BYTES = 1000
    big = tmp_path / "big.npy"
    big.write_bytes(b"\0" * size)

    done = run_client("submit", "--benchmark", "cifar10", "--model", MODEL,
                      f"cifar10-test={big}", url=live_server.url, token=_token())

    assert done.returncode == 1
    what = "'cifar10-test'" if size == 5000 else "the request body"
    assert done.stderr == (f"error: file_too_large: {what} is larger than the upload limit of "
                           "1000 bytes" + (" (field cifar10-test)" if size == 5000 else "") + "\n")
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_prints_a_token_for_a_username_and_password(live_server: LiveServer) -> None:
    user = factories.user_create("alice")

    done = run_client("token", "--username", "alice", url=live_server.url,
                      EVALSERVER_PASSWORD="a-long-test-password")
    wrong = run_client("token", "--username", "alice", url=live_server.url,
                       EVALSERVER_PASSWORD="wrong")

    assert (done.returncode, done.stdout) == (0, Token.objects.get(user=user).key + "\n")
    assert wrong.returncode == 1
    assert wrong.stderr == ("error: invalid_credentials: wrong username or password "
                            "(or the account is inactive)\n")


def test_it_exits_1_without_a_token(tmp_path: Path) -> None:
    preds = write_json(tmp_path / "p.json", [3] * 10)

    done = run_client("submit", "--benchmark", "cifar10", "--model", "m",
                      f"cifar10-test={preds}", url="http://127.0.0.1:9")

    assert done.returncode == 1
    assert done.stderr == ("error: no API token: set EVALSERVER_TOKEN or pass --token (get one "
                           "with `python -m leaderboard.client token --username NAME`)\n")


def test_it_exits_1_when_the_server_cannot_be_reached() -> None:
    url = f"http://127.0.0.1:{free_port()}"

    done = run_client("status", "1", url=url)

    assert done.returncode == 1
    assert done.stderr.startswith(f"error: cannot reach {url}: ")
    assert "Connection refused" in done.stderr


def test_it_exits_1_for_a_missing_file(tmp_path: Path) -> None:
    done = run_client("submit", "--benchmark", "cifar10", "--model", "m",
                      f"cifar10-test={tmp_path / 'nope.json'}", url="http://127.0.0.1:9",
                      token="t")

    assert done.returncode == 1
    assert done.stderr == f"error: {tmp_path / 'nope.json'}: no such file (or not readable)\n"


def test_it_imports_only_the_standard_library() -> None:
    tree = ast.parse((PROJECT_ROOT / "leaderboard" / "client.py").read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree)
               if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert modules - {"__future__"} <= sys.stdlib_module_names
