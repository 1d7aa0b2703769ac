"""The client as researchers install it: the wheel and sdist that scripts/test.sh builds with
`python -m build` (EVALSERVER_CLIENT_DIST), installed offline with its dependencies' wheels into
a fresh venv (no Django, no NumPy), then `--version`, `login`, `submit` and `status` against a
live server and a real scoring worker."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

import evalserver_client
from leaderboard.submissions.models import Submission
from tests import factories
from tests.api_support import top1_accuracy
from tests.helpers import skip_unless_ci

MODEL = "resnet_basic_110"
VERSION = evalserver_client.__version__


@pytest.fixture
def dist() -> Path:
    folder = os.environ.get("EVALSERVER_CLIENT_DIST")
    if not folder:
        skip_unless_ci("EVALSERVER_CLIENT_DIST is not set: scripts/test.sh builds the client's "
                       "wheel and sdist there")
    return Path(folder)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_installs_the_built_wheel_offline_and_scores_a_submission(
    dist: Path, loaded: Settings, data_dir: Path, scoring_worker: Path,
    live_server: LiveServer, tmp_path: Path,
) -> None:
    (sdist,) = dist.glob("evalserver_client-*.tar.gz")
    (wheel,) = dist.glob("evalserver_client-*.whl")
    assert sdist.name == f"evalserver_client-{VERSION}.tar.gz"
    assert wheel.name == f"evalserver_client-{VERSION}-py3-none-any.whl"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    root = f"evalserver_client-{VERSION}"
    assert {f"{root}/README.md", f"{root}/pyproject.toml", f"{root}/evalserver_client/cli.py",
            f"{root}/evalserver_client/commands/submissions.py"} <= names

    factories.user_create("alice")
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path),
                   "XDG_CONFIG_HOME": str(tmp_path / "config"),
                   "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def run(*command: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(part) for part in command], cwd=tmp_path,
                              env={**environment, **env}, capture_output=True, text=True,
                              timeout=300, check=False)

    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", venv).returncode == 0
    installed = run(venv / "bin" / "pip", "install", "--no-index", "--find-links",
                    dist / "deps", wheel)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert run(venv / "bin" / "python", "-c", "import django").returncode == 1
    assert run(venv / "bin" / "python", "-c", "import numpy").returncode == 1
    client = venv / "bin" / "evalserver-client"

    version = run(client, "--version")
    login = run(client, "--url", live_server.url, "login", "--username", "alice",
                EVALSERVER_PASSWORD="a-long-test-password")
    test_file = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]
    submitted = run(client, "submit", "--benchmark", "cifar10", "--model", MODEL,
                    f"cifar10-test={test_file}")

    assert (version.returncode, version.stdout) == (0, f"evalserver-client {VERSION}\n")
    assert login.returncode == 0, login.stderr
    assert submitted.returncode == 0, submitted.stderr + scoring_worker.read_text()
    pk = Submission.objects.get().pk
    status = run(client, "status", str(pk))
    accuracy, correct, total = top1_accuracy(data_dir, MODEL, "cifar10-test")
    assert submitted.stdout.splitlines()[:2] == [
        f"submission {pk} queued: {live_server.url}/submissions/{pk}/",
        f"submission {pk}: {MODEL} on cifar10 - scored"]
    assert status.returncode == 0 and status.stdout.splitlines() == \
        submitted.stdout.splitlines()[1:]
    original = next(line for line in status.stdout.splitlines() if line.startswith("original"))
    assert original.split()[1:3] == [f"{100 * accuracy:.2f}%", f"{correct}/{total}"]
