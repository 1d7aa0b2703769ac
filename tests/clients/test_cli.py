"""`python -m evalserver_client` (clients/python) as a researcher runs it: a subprocess with the
client's own config folder, against a live server and a real scoring worker; and the package
on its own: without Django (its only dependency `requests`), and installed with pip into a bare
venv. Exit codes: clients/python/README.md, "Exit codes"."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from leaderboard.submissions.models import Score, Submission
from tests import factories
from tests.api_support import scored_in_process, top1_accuracy, write_json
from tests.helpers import PROJECT_ROOT, free_port

MODEL = "resnet_basic_110"
CLIENT_DIR = PROJECT_ROOT / "clients" / "python"
PACKAGE_DIR = CLIENT_DIR / "evalserver_client"


# what the client needs besides the standard library: requests and its own dependencies
CLIENT_DEPENDENCIES = ("requests", "urllib3", "idna", "certifi", "charset_normalizer")


def dependencies_only(folder: Path) -> Path:
    """A folder with links to the client's dependencies in this venv, and nothing else (no
    Django, no NumPy): what a researcher's fresh environment has after `pip install`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in CLIENT_DEPENDENCIES:
        spec = __import__(name).__file__
        assert spec is not None
        (folder / name).symlink_to(Path(spec).parent)
    return folder


def run_client(*args: str, url: str, token: str | None = None, config_home: Path | None = None,
               stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m evalserver_client ARGS` with this venv's Python (requests importable), a
    config folder of its own (a fresh one unless given: no login of the machine's user) and
    no proxy unless `env` sets one."""
    home = config_home or Path(tempfile.mkdtemp(prefix="evalserver-client-"))
    environment = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(CLIENT_DIR),
                   "EVALSERVER_URL": url, "XDG_CONFIG_HOME": str(home), "HOME": str(home),
                   **env}
    if token:
        environment["EVALSERVER_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "evalserver_client", *args], cwd=PROJECT_ROOT,
        env=environment, input=stdin, capture_output=True, text=True, timeout=180, check=False)


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
        f"submission {submission.pk} queued: {live_server.url}/submissions/{submission.pk}/",
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
    header, row = (line.split() for line in board.stdout.splitlines()[2:4])
    assert header == ["rank", "rank", "(UB)", "model", "submitter", "id", "original",
                      "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6"]
    # rank (UB): 1 once the worker has computed it, "-" until then (tests/clients/
    # test_cli_boards.py computes it); then the original accuracy and its interval
    assert [row[0], *row[2:8]] == ["1", MODEL, "alice", str(submission.pk), _percent(accuracy),
                                   f"[{100 * score.ci_low:.2f},", f"{100 * score.ci_high:.2f}]"]
    assert row[-2:] == ["-", "-"]  # no predictions for the new test sets


@pytest.mark.django_db(transaction=True)
def test_it_exits_1_with_the_reason_when_scoring_fails(
    loaded: Settings, scoring_worker: Path, live_server: LiveServer, tmp_path: Path
) -> None:
    # a file over the in-request check's size is accepted, and the worker's parse refuses it
    loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 0
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
def test_it_exits_5_with_the_servers_refusal_of_a_bad_file(
    loaded: Settings, live_server: LiveServer, tmp_path: Path
) -> None:
    preds = [3] * 10_000
    preds[17] = 10
    bad = write_json(tmp_path / "bad.json", preds)

    done = run_client("submit", "--benchmark", "cifar10", "--model", "bad",
                      f"cifar10-test={bad}", url=live_server.url, token=_token())

    assert done.returncode == 5
    assert done.stdout == ""
    assert done.stderr == ("error: class_out_of_range: cifar10-test: row 17 (0-based) has class "
                           "id 10; ids must be in 0..9\n")
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_exits_5_with_the_servers_error(loaded: Settings, data_dir: Path,
                                          live_server: LiveServer) -> None:
    test_file = factories.cifar10_model_files(data_dir, MODEL)["cifar10-test"]

    done = run_client("submit", "--benchmark", "svhn", "--model", MODEL,
                      f"cifar10-test={test_file}", url=live_server.url, token=_token())

    assert done.returncode == 5
    assert done.stdout == ""
    assert done.stderr == ("error: unknown_benchmark: benchmark: no benchmark 'svhn'; "
                           "use one of: 20news, caltech256, cifar10, cifar100, imagenet, imdb, "
                           "mnist\n")
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

    assert done.returncode == 5
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
    assert wrong.returncode == 5
    assert wrong.stderr == ("error: invalid_credentials: wrong username or password "
                            "(or the account is inactive)\n")


def test_it_exits_3_without_a_token(tmp_path: Path) -> None:
    preds = write_json(tmp_path / "p.json", [3] * 10)

    done = run_client("submit", "--benchmark", "cifar10", "--model", "m",
                      f"cifar10-test={preds}", url="http://127.0.0.1:9")

    assert done.returncode == 3
    assert done.stderr == ("error: no API token: log in with `evalserver-client login`, or set "
                           "EVALSERVER_TOKEN or pass --token\n")


def test_it_exits_4_when_the_server_cannot_be_reached() -> None:
    url = f"http://127.0.0.1:{free_port()}"

    done = run_client("status", "1", url=url)

    assert done.returncode == 4
    assert done.stderr == f"error: cannot reach {url}: [Errno 111] Connection refused\n"


def test_it_exits_2_for_a_missing_file_or_a_bad_argument(tmp_path: Path) -> None:
    done = run_client("submit", "--benchmark", "cifar10", "--model", "m",
                      f"cifar10-test={tmp_path / 'nope.json'}", url="http://127.0.0.1:9",
                      token="t")
    unknown = run_client("status", "forty-two", url="http://127.0.0.1:9")

    assert done.returncode == 2
    assert done.stderr == f"error: {tmp_path / 'nope.json'}: no such file (or not readable)\n"
    assert unknown.returncode == 2
    assert unknown.stderr.endswith("error: argument id: invalid int value: 'forty-two'\n")


MODULES = ["__init__", "__main__", "api", "checks/__init__", "checks/arrays", "checks/names",
           "checks/npy", "checks/submission", "checks/text", "cli", "client",
           "commands/__init__", "commands/account", "commands/boards", "commands/check",
           "commands/submissions", "config", "errors", "output"]


@pytest.mark.parametrize("module", MODULES)
def test_it_imports_only_the_standard_library_and_requests(module: str) -> None:
    """requests and its urllib3 (api.py: the upload's block size); NumPy only inside a
    function (client._source): an optional dependency."""
    tree = ast.parse((PACKAGE_DIR / f"{module}.py").read_text())
    top = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    modules = {alias.name.split(".")[0] for node in ast.walk(tree)
               if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    top_level = {alias.name.split(".")[0] for node in top if isinstance(node, ast.Import)
                 for alias in node.names}
    assert modules - {"__future__"} <= sys.stdlib_module_names | {"requests", "urllib3",
                                                                   "numpy"}
    assert "numpy" not in top_level
    if module.startswith("checks/"):  # files are checked without NumPy, and offline
        assert modules - {"__future__"} <= sys.stdlib_module_names


def test_the_package_has_no_other_modules() -> None:
    """So that the parametrized test above checks every module of the package."""
    assert sorted(p.relative_to(PACKAGE_DIR).with_suffix("").as_posix()
                  for p in PACKAGE_DIR.rglob("*.py")) == sorted(MODULES)


def test_it_runs_without_django_or_numpy(tmp_path: Path) -> None:
    """Isolated mode (no environment, no user site), sys.path cut to the package, its
    dependencies and the standard library: Django and NumPy cannot even be found, and the
    command runs."""
    deps = dependencies_only(tmp_path / "deps")
    code = "; ".join([
        "import sys, importlib.util",
        f"sys.path[:] = [{str(CLIENT_DIR)!r}, {str(deps)!r}] + [p for p in sys.path if p and "
        "not p.endswith(('site-packages', 'dist-packages'))]",
        "assert importlib.util.find_spec('django') is None, sys.path",
        "assert importlib.util.find_spec('numpy') is None, sys.path",
        "import evalserver_client.cli as cli",
        "assert cli.parser().parse_args(['status', '42']).id == 42",
        "cli.main(['--version'])",
    ])

    done = subprocess.run([sys.executable, "-I", "-c", code], cwd=CLIENT_DIR, env={},
                          capture_output=True, text=True, timeout=60, check=False)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "evalserver-client 0.2.0\n"


@pytest.mark.slow
def test_it_installs_with_pip(tmp_path: Path) -> None:
    """A wheel built offline by this venv's setuptools, installed into a bare venv (whose own
    setuptools 65 cannot build one without the `wheel` package), runs as `evalserver-client`.
    Offline, so its dependencies come from this venv through a .pth file (test_package.py
    installs them from wheels, as CI builds them)."""
    source = shutil.copytree(CLIENT_DIR, tmp_path / "src",  # the build writes into its source
                             ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path),
                   "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def run(*command: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(part) for part in command], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=300, check=False)

    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                "--no-index", "-w", tmp_path / "wheels", source)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "wheels").glob("evalserver_client-0.2.0-*.whl")
    venv = tmp_path / "venv"
    created = run(sys.executable, "-m", "venv", venv)
    assert created.returncode == 0, created.stderr
    assert run(venv / "bin" / "python", "-c", "import django").returncode == 1
    (site,) = (venv / "lib").glob("python3.*/site-packages")
    (site / "client-dependencies.pth").write_text(f"{dependencies_only(tmp_path / 'deps')}\n")

    installed = run(venv / "bin" / "pip", "install", "--no-index", "--no-deps", wheel)
    helped = run(venv / "bin" / "evalserver-client", "--help")

    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: evalserver-client [-h] [--version] [--url URL]")
    assert ("{login,logout,whoami,benchmarks,benchmark,leaderboard,submissions,submit,check,"
            "status,cancel,rerun,withdraw,compare,token}") in helped.stdout


@pytest.mark.django_db(transaction=True)
def test_it_prints_every_page_of_the_leaderboard(
    loaded: Settings, data_dir: Path, live_server: LiveServer
) -> None:
    models = ("resnet_basic_110", "wrn_28_10", "vgg16_keras")
    scored = {m: scored_in_process(data_dir, m, factories.user_create(f"u-{m}")) for m in models}
    accuracy = {m: top1_accuracy(data_dir, m, "cifar10.1-v6")[0] for m in models}
    expected = sorted(models, key=lambda m: (-accuracy[m], scored[m].pk))

    board = run_client("leaderboard", "cifar10", "--sort", "cifar10.1-v6", "--page-size", "1",
                       url=live_server.url)

    assert board.returncode == 0, board.stderr
    rows = [line.split() for line in board.stdout.splitlines()[3:]]
    assert [(row[2], row[4]) for row in rows] == [(m, str(scored[m].pk)) for m in expected]
