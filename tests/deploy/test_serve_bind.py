"""scripts/serve.sh listens on loopback only unless told a proxy is in front: gunicorn alone on
an address others can reach is frozen by clients that trickle their headers (every thread
waits on one; docs/operators/one-machine.md, "Reachable from other machines"). The refusal
comes first, before anything is installed or started, so serve.sh itself is run here, by a real
bash with a PATH holding only `dirname`: had it gone further, it would have stopped at once for
want of the system packages (tests/deploy/test_system_packages.py). What lets a bind through is
asked of scripts/lib.sh's `bind_check`, which serve.sh calls."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import PROJECT_ROOT

BASH = "/bin/bash"


def _refusal(bind: str) -> str:
    return (
        f"error: BIND={bind} is not a loopback address: gunicorn alone must not listen where "
        "others can reach it (a client sending its headers a byte at a time holds one of its "
        "threads for as long as it likes, and a few such clients leave every request "
        "unanswered). Put a reverse proxy in front that reads whole requests first "
        '(docs/operators/one-machine.md, "Reachable from other machines"), or bind '
        "127.0.0.1; where only that proxy reaches this address, set BIND_BEHIND_PROXY=1.\n")


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    dirname = shutil.which("dirname")
    assert dirname is not None
    (path / "dirname").symlink_to(dirname)
    return path


@pytest.mark.parametrize("bind", ["0.0.0.0:8000", "[::]:8000", "192.168.1.5:8000",
                                  "evals.example.org:8000", "127.0.0.1.example.org:8000",
                                  "[::ffff:10.0.0.1]:8000"])
def test_it_refuses_to_serve_where_others_can_reach_gunicorn(
        bin_dir: Path, tmp_path: Path, bind: str) -> None:
    done = subprocess.run(
        [BASH, "scripts/serve.sh"], cwd=PROJECT_ROOT, capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL,
        env={"PATH": str(bin_dir), "HOME": str(tmp_path), "BIND": bind})

    assert (done.returncode, done.stdout, done.stderr) == (2, "", _refusal(bind))


def _check(bind: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, "-c", 'source scripts/lib.sh && bind_check "$BIND"'], cwd=PROJECT_ROOT,
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"PATH": "/nonexistent", "BIND": bind, **env})


@pytest.mark.parametrize(("bind", "parts"), [
    ("127.0.0.1:8000", "127.0.0.1 8000"),
    ("127.3.4.250:1", "127.3.4.250 1"),
    ("[::1]:8000", "::1 8000"),
    ("localhost:65535", "localhost 65535"),
])
def test_it_lets_a_loopback_bind_through(bind: str, parts: str) -> None:
    done = _check(bind)

    assert (done.returncode, done.stdout, done.stderr) == (0, parts + "\n", "")


@pytest.mark.parametrize("word", ["1", "true", "YES", "on"])
def test_it_lets_any_bind_through_behind_a_proxy(word: str) -> None:
    done = _check("0.0.0.0:8000", BIND_BEHIND_PROXY=word)

    assert (done.returncode, done.stdout, done.stderr) == (0, "0.0.0.0 8000\n", "")


@pytest.mark.parametrize("word", ["0", "false", "no", "off", ""])
def test_it_refuses_when_told_no_proxy_is_in_front(word: str) -> None:
    done = _check("0.0.0.0:8000", BIND_BEHIND_PROXY=word)

    assert (done.returncode, done.stdout, done.stderr) == (2, "", _refusal("0.0.0.0:8000"))


@pytest.mark.parametrize(("bind", "env", "message"), [
    ("8000", {}, "error: BIND=8000 is not valid: expected HOST:PORT (a port from 1 to 65535; "
                 "an IPv6 address in brackets, as [::1]:8000)\n"),
    ("unix:/tmp/gunicorn.sock", {}, "error: BIND=unix:/tmp/gunicorn.sock is not valid: "
     "expected HOST:PORT (a port from 1 to 65535; an IPv6 address in brackets, as "
     "[::1]:8000)\n"),
    ("::1:8000", {}, "error: BIND=::1:8000 is not valid: expected HOST:PORT (a port from 1 to "
                     "65535; an IPv6 address in brackets, as [::1]:8000)\n"),
    ("127.0.0.1:65536", {}, "error: BIND=127.0.0.1:65536 is not valid: expected HOST:PORT (a "
                            "port from 1 to 65535; an IPv6 address in brackets, as "
                            "[::1]:8000)\n"),
    ("127.0.0.1:http", {}, "error: BIND=127.0.0.1:http is not valid: expected HOST:PORT (a "
                           "port from 1 to 65535; an IPv6 address in brackets, as "
                           "[::1]:8000)\n"),
    ("0.0.0.0:8000", {"BIND_BEHIND_PROXY": "maybe"},
     "error: BIND_BEHIND_PROXY=maybe is not valid: expected one of 0, 1, false, no, off, on, "
     "true, yes\n"),
])
def test_it_refuses_a_bind_it_cannot_read(bind: str, env: dict[str, str], message: str) -> None:
    done = _check(bind, **env)

    assert (done.returncode, done.stdout, done.stderr) == (2, "", message)
