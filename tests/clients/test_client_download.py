"""The client as a participant gets it from a server: the wheel scripts/serve.sh builds
(scripts/lib.sh's client_wheel_build, from this checkout, offline), offered at /client/ of a
live server, installed from that URL with pip into a fresh venv without NumPy or Django, whose
`evalserver-client check` then checks a real CIFAR-10 file against the same server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

from evalserver_client import __version__
from tests import factories
from tests.clients.test_cli import dependencies_only
from tests.helpers import PROJECT_ROOT


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_installs_the_served_wheel_with_pip_and_checks_a_file(
    loaded: Settings, data_dir: Path, live_server: LiveServer, tmp_path: Path
) -> None:
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path),
                   "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                   "XDG_CONFIG_HOME": str(tmp_path / "config")}

    def run(*command: str | Path, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(part) for part in command], cwd=cwd, env=environment,
                              capture_output=True, text=True, timeout=300, check=False)

    built = run("bash", "-c", f"source scripts/lib.sh && client_wheel_build {tmp_path}/client",
                cwd=PROJECT_ROOT)
    assert built.returncode == 0, built.stderr
    wheel = f"evalserver_client-{__version__}-py3-none-any.whl"
    assert [p.name for p in (tmp_path / "client").iterdir()] == [wheel]
    loaded.EVALSERVER_CLIENT_WHEEL_DIR = tmp_path / "client"
    page = requests.get(f"{live_server.url}/client/", timeout=30).text
    (command,) = re.findall(r"<code>(pip install http\S+)</code>", page)
    assert command == f"pip install {live_server.url}/client/{wheel}"

    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", venv).returncode == 0
    (site,) = (venv / "lib").glob("python3.*/site-packages")
    (site / "client-dependencies.pth").write_text(f"{dependencies_only(tmp_path / 'deps')}\n")
    # offline: the wheel from the live server, its dependencies through the .pth above
    installed = run(venv / "bin" / "pip", "install", "--no-index", "--no-deps",
                    command.removeprefix("pip install "))
    test_file = factories.cifar10_model_files(data_dir, "resnet_basic_110")["cifar10-test"]
    checked = run(venv / "bin" / "evalserver-client", "--url", live_server.url, "check",
                  "--benchmark", "cifar10", test_file)

    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert run(venv / "bin" / "python", "-c", "import numpy").returncode == 1
    assert (checked.returncode, checked.stderr) == (0, "")
    assert checked.stdout.splitlines()[0] == (
        f"cifar10-test={test_file}: ok, 10000 rows of top-1 class ids (int64, .json)")
