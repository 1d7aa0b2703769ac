"""`from evalserver_client import Client` as a notebook uses it, in this process, against a
live server and a real scoring worker: a NumPy array submitted as it is (sent as .npy, written
in memory) and scored with the accuracy computed here from the labels."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from evalserver_client import Client, ClientError
from evalserver_client.errors import RefusedError
from leaderboard.submissions.models import Submission
from tests import factories
from tests.api_support import top1_accuracy

MODEL = "resnet_basic_110"


@pytest.fixture
def no_stored_login(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Neither the machine user's config file nor the environment's settings."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in ("EVALSERVER_URL", "EVALSERVER_TOKEN", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.django_db(transaction=True)
def test_it_submits_a_numpy_array_and_returns_its_scores(
    loaded: Settings, data_dir: Path, scoring_worker: Path, live_server: LiveServer,
    no_stored_login: None,
) -> None:
    token = str(Token.objects.create(user=factories.user_create("alice")).key)
    path = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]
    predictions = np.array(json.loads(path.read_text()), dtype=np.int16)
    accuracy, correct, total = top1_accuracy(data_dir, MODEL, "cifar10-test")
    client = Client(live_server.url, token)

    sub = client.submit("cifar10", MODEL, {"cifar10-test": predictions}, public=False)

    assert sub["status"] == "scored", scoring_worker.read_text()
    original = sub["scores"]["original"]
    assert (original["correct"], original["total"]) == (correct, total)
    assert original["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert sub["page"] == f"{live_server.url}/submissions/{sub['id']}/"
    stored = Submission.objects.get().files.get()
    as_npy = io.BytesIO()
    np.save(as_npy, predictions, allow_pickle=False)
    assert (stored.original_name, stored.size) == ("cifar10-test.npy",
                                                   len(as_npy.getvalue()))
    assert client.status(sub["id"]) == sub
    assert [s["id"] for s in client.submissions()] == [sub["id"]]


@pytest.mark.django_db(transaction=True)
def test_it_raises_the_servers_refusal_with_its_code(loaded: Settings, live_server: LiveServer,
                                                     no_stored_login: None) -> None:
    client = Client(live_server.url)

    with pytest.raises(RefusedError) as refused:
        client.status(999999)

    assert isinstance(refused.value, ClientError) and refused.value.exit_code == 5
    assert (refused.value.code, refused.value.status, str(refused.value)) == (
        "not_found", 404, "not_found: no submission 999999 that you can see")


@pytest.mark.django_db(transaction=True)
def test_it_checks_files_from_python_without_uploading_them(
    loaded: Settings, data_dir: Path, live_server: LiveServer, no_stored_login: None,
    tmp_path: Path,
) -> None:
    files = factories.cifar10_model_files(data_dir, MODEL)
    short = tmp_path / "short.npy"
    np.save(short, np.array(json.loads(files["cifar10.1-v6"].read_text()))[:-1])

    verdict = Client(live_server.url).check("cifar10", {"cifar10-test": files["cifar10-test"],
                                                        "cifar10.1-v6": short})

    assert verdict.ok is False and verdict.problems == []
    accepted, refused = verdict.files
    assert accepted.problem is None and accepted.content is not None
    assert (accepted.content.kind, accepted.content.rows) == ("ids", 10_000)
    assert refused.problem is not None and refused.content is None
    assert (refused.problem.code, refused.message) == (
        "wrong_row_count", "cifar10.1-v6: the .npy file has 1999 rows; expected 2000 (one per "
        "example, in the benchmark's order)")
    assert not Submission.objects.exists()
