"""The first accounts, as scripts/serve.sh prints how to make them (scripts/lib.sh's
`first_accounts_help`): each command works as printed in a second shell, which has none of
serve.sh's environment. Where serve.sh keeps the key in var/secret_key, that shell has no
SECRET_KEY and the settings refuse to load without one, so the printed commands read the file.

The second shell is a real bash in a folder laid out as the checkout (its `manage.py` and
`.venv`, a `var/secret_key` of its own), with an environment holding only PATH and the test's
SQLite database: what a person opening another terminal has, without touching the checkout's
own var/."""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.helpers import PROJECT_ROOT

BASH = "/bin/bash"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder laid out as the checkout serve.sh runs in, with a key of its own."""
    folder = tmp_path / "checkout"
    (folder / "var").mkdir(parents=True)
    (folder / "manage.py").symlink_to(PROJECT_ROOT / "manage.py")
    (folder / ".venv").symlink_to(PROJECT_ROOT / ".venv")
    (folder / "var" / "secret_key").write_text(secrets.token_urlsafe(50) + "\n")
    return folder


def _printed(checkout: Path, key_file: str | None) -> list[str]:
    env = {"PATH": os.environ["PATH"], **({"SECRET_KEY_FILE": key_file} if key_file else {})}
    done = subprocess.run(
        [BASH, "-c", f"source {PROJECT_ROOT}/scripts/lib.sh && first_accounts_help "
                     "http://127.0.0.1:8000"],
        cwd=checkout, env=env, capture_output=True, text=True, check=True, timeout=30)
    return done.stdout.splitlines()


def _second_shell(checkout: Path, command: str, database: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "DATABASE_URL": f"sqlite:///{database}",
           "DJANGO_SUPERUSER_PASSWORD": "a-long-first-password", "LOG_LEVEL": "WARNING"}
    return subprocess.run([BASH, "-c", command], cwd=checkout, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_it_prints_first_account_commands_that_run_as_printed_in_another_shell(
    checkout: Path, tmp_path: Path
) -> None:
    lines = _printed(checkout, "var/secret_key")
    key_prefix = 'SECRET_KEY="$(cat var/secret_key)" .venv/bin/python manage.py'
    assert lines == [
        f"The first accounts, in another terminal from {checkout}:",
        f"  {key_prefix} createsuperuser        # you: every right, and the admin pages",
        "  anyone signs up on http://127.0.0.1:8000/signup/ (a participant; token on /profile/)",
        f"  {key_prefix} role grant --username NAME --role reviewer   # reviews labels",
        f"  {key_prefix} role grant --username NAME --role host       # hosts benchmarks",
        "  (the site team's roles; what each may do: docs/hosts/roles.md)"]
    commands = [re.sub(r"\s+#.*$", "", line.strip()) for line in lines if "manage.py" in line]
    database = tmp_path / "db.sqlite3"
    migrate = _second_shell(checkout, commands[0].replace("createsuperuser", "migrate -v 0"),
                            database)
    assert migrate.returncode == 0, migrate.stderr
    # createsuperuser as printed, its questions answered by options (no terminal here)
    created = _second_shell(
        checkout, commands[0] + " --noinput --username root --email root@example.org", database)
    assert created.returncode == 0, created.stderr
    granted = _second_shell(checkout, commands[1].replace("NAME", "root"), database)
    assert granted.returncode == 0, granted.stderr
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT username, is_staff, is_superuser FROM auth_user").fetchall() \
            == [("root", 1, 1)]
        assert db.execute("SELECT t.slug, m.role FROM leaderboard_hostteammembership m "
                          "JOIN leaderboard_hostteam t ON m.team_id = t.id").fetchall() == [
            ("site", "reviewer")]

    # without the key in it, the same command fails: the prefix is what makes it work
    bare = _second_shell(checkout, commands[0].replace(key_prefix, ".venv/bin/python manage.py")
                         + " --noinput --username other --email o@example.org", database)
    assert bare.returncode != 0 and "SECRET_KEY" in bare.stderr


def test_it_prints_plain_commands_when_the_key_is_the_operators(checkout: Path) -> None:
    """A SECRET_KEY in the environment or .env: the second shell has it as well."""
    lines = _printed(checkout, None)
    manage = ".venv/bin/python manage.py"
    assert [line for line in lines if "manage.py" in line] == [
        f"  {manage} createsuperuser        # you: every right, and the admin pages",
        f"  {manage} role grant --username NAME --role reviewer   # reviews labels",
        f"  {manage} role grant --username NAME --role host       # hosts benchmarks"]
