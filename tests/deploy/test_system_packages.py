"""scripts/lib.sh's ensure_system_packages, the one function serve.sh and test.sh install the
missing Debian packages with. Run by a real bash with a PATH that holds only stand-ins for
id, sudo and apt-get (which record how they were called): nothing is installed here."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.helpers import PROJECT_ROOT

BASH = "/bin/bash"
INSTALL = "apt-get install -y -q --no-install-recommends redis-server wrk"


def _script(path: Path, body: str) -> None:
    path.write_text(f"#!{BASH}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A PATH with no redis-server and no wrk; `id -u` answers $FAKE_UID."""
    path = tmp_path / "bin"
    path.mkdir()
    _script(path / "id", 'echo "$FAKE_UID"')
    return path


def _apt_get(bin_dir: Path, *, fails: bool = False) -> None:
    """An apt-get that records its arguments and, on install, provides the packages' programs."""
    _script(bin_dir / "apt-get", f"""
echo "apt-get $* DEBIAN_FRONTEND=$DEBIAN_FRONTEND" >>"$CALLS"
{'exit 100' if fails else ''}
if [ "$1" = install ]; then
    for package in "$@"; do
        case $package in redis-server|wrk)
            /bin/cp "{bin_dir}/id" "{bin_dir}/$package";;
        esac
    done
fi""")


Ran = tuple[subprocess.CompletedProcess[str], list[str]]


def _ensure(bin_dir: Path, tmp_path: Path, *, uid: int,
            packages: str = "redis-server wrk") -> Ran:
    calls = tmp_path / "calls"
    calls.touch()
    done = subprocess.run(
        [BASH, "-c", f"source scripts/lib.sh && ensure_system_packages {packages}"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"PATH": str(bin_dir), "FAKE_UID": str(uid), "CALLS": str(calls),
             "HOME": str(tmp_path)})
    return done, calls.read_text().splitlines()


def test_it_names_the_packages_and_the_command_when_it_cannot_install(
        bin_dir: Path, tmp_path: Path) -> None:
    done, calls = _ensure(bin_dir, tmp_path, uid=1000)  # not root, no sudo, no apt-get

    assert done.returncode == 1
    assert done.stderr == (
        "error: missing system packages: redis-server wrk. Install them, then run this again:\n"
        f"    sudo apt-get update && sudo {INSTALL}\n")
    assert calls == []


def test_it_installs_with_apt_get_as_root(bin_dir: Path, tmp_path: Path) -> None:
    _apt_get(bin_dir)

    done, calls = _ensure(bin_dir, tmp_path, uid=0)

    assert done.returncode == 0, done.stderr
    assert calls == ["apt-get update -q DEBIAN_FRONTEND=noninteractive",
                     f"{INSTALL} DEBIAN_FRONTEND=noninteractive"]
    assert "== Installing the missing system packages: redis-server wrk" in done.stdout
    assert os.access(bin_dir / "redis-server", os.X_OK)


def test_it_installs_through_sudo_when_not_root(bin_dir: Path, tmp_path: Path) -> None:
    _apt_get(bin_dir)
    # a sudo that needs no password (`sudo -n true` succeeds) and runs the command as given
    _script(bin_dir / "sudo", 'echo "sudo $*" >>"$CALLS"\n[ "$1" = -n ] && shift\n"$@"')

    done, calls = _ensure(bin_dir, tmp_path, uid=1000)

    assert done.returncode == 0, done.stderr
    assert calls == ["sudo -n true",
                     "sudo apt-get update -q",
                     "apt-get update -q DEBIAN_FRONTEND=noninteractive",
                     f"sudo {INSTALL}",
                     f"{INSTALL} DEBIAN_FRONTEND=noninteractive"]


def test_it_does_not_ask_a_sudo_that_needs_a_password_without_a_terminal(
        bin_dir: Path, tmp_path: Path) -> None:
    _apt_get(bin_dir)
    _script(bin_dir / "sudo", 'echo "sudo $*" >>"$CALLS"\nexit 1')

    done, calls = _ensure(bin_dir, tmp_path, uid=1000)

    assert done.returncode == 1
    assert calls == ["sudo -n true"]
    assert f"    sudo apt-get update && sudo {INSTALL}\n" in done.stderr


def test_it_stops_with_the_command_when_apt_get_fails(bin_dir: Path, tmp_path: Path) -> None:
    _apt_get(bin_dir, fails=True)

    done, calls = _ensure(bin_dir, tmp_path, uid=0)

    assert done.returncode == 1
    assert calls == ["apt-get update -q DEBIAN_FRONTEND=noninteractive"]
    assert done.stderr == (
        "error: could not install redis-server wrk. Install them, then run this again:\n"
        f"    apt-get update && {INSTALL}\n")


def test_it_does_nothing_when_nothing_is_missing(bin_dir: Path, tmp_path: Path) -> None:
    _apt_get(bin_dir)
    for program in ("redis-server", "wrk"):
        _script(bin_dir / program, "")

    done, calls = _ensure(bin_dir, tmp_path, uid=0)

    assert (done.returncode, done.stdout, done.stderr, calls) == (0, "", "", [])


def test_it_refuses_a_package_it_does_not_know(bin_dir: Path, tmp_path: Path) -> None:
    done, _ = _ensure(bin_dir, tmp_path, uid=0, packages="nginx")

    assert done.returncode != 0
    assert "error: system_package_missing: unknown package nginx" in done.stderr
