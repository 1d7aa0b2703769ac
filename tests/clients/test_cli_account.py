"""`login`, `logout`, `whoami` and `token` against a live server: the per-user config file
(mode 0600 in a 0700 folder), the order URL and token are taken in (flag, env, file), the
revoked token's 401 (exit 3), and each command's --json document."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from leaderboard.catalog.teams.models import HostTeam
from leaderboard.catalog.teams.selectors import host_team_site_get
from leaderboard.catalog.teams.services import host_team_member_set
from tests import factories
from tests.clients.test_cli import run_client

PASSWORD = "a-long-test-password"  # tests/factories.user_create


@pytest.mark.django_db(transaction=True)
def test_it_logs_in_to_a_0600_file_that_whoami_reads(live_server: LiveServer,
                                                     tmp_path: Path) -> None:
    alice = factories.user_create("alice")
    home = tmp_path / "config"

    login = run_client("login", "--username", "alice", url=live_server.url, config_home=home,
                       EVALSERVER_PASSWORD=PASSWORD)
    # no EVALSERVER_URL either: the file's URL
    whoami = run_client("whoami", url="", config_home=home)

    path = home / "evalserver" / "config.json"
    key = Token.objects.get(user=alice).key
    assert (login.returncode, login.stderr) == (0, "")
    assert login.stdout == (f"logged in to {live_server.url} as alice; token stored in "
                            f"{path}\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"url": live_server.url, "token": key,
                                            "username": "alice"}
    assert (whoami.returncode, whoami.stdout) == (
        0, f"alice (participant) on {live_server.url}; token from config\n")

    lab = HostTeam.objects.create(slug="vision-lab", name="Vision lab")
    host_team_member_set(actor=None, team=lab, user=alice, role="host")
    host_team_member_set(actor=None, team=host_team_site_get(), user=alice, role="reviewer")
    with_teams = run_client("whoami", url="", config_home=home)
    assert (with_teams.returncode, with_teams.stdout) == (  # a team member: a maintainer
        0, f"alice (maintainer) on {live_server.url}; token from config\n"
           "  team site (Site team): reviewer\n"
           "  team vision-lab (Vision lab): host\n")


@pytest.mark.django_db(transaction=True)
def test_it_takes_the_flag_then_the_environment_then_the_file(live_server: LiveServer,
                                                              tmp_path: Path) -> None:
    factories.user_create("alice")
    bob = Token.objects.create(user=factories.team_role_give(  # a maintainer: a team role
        factories.user_create("bob", staff=True), "reviewer")).key
    carol = Token.objects.create(user=factories.user_create("carol")).key
    home = tmp_path / "config"
    assert run_client("login", "--username", "alice", url=live_server.url, config_home=home,
                      EVALSERVER_PASSWORD=PASSWORD).returncode == 0

    def who(*flags: str, **env: str) -> tuple[int, dict[str, object]]:
        done = run_client(*flags, "whoami", "--json", url=live_server.url, config_home=home,
                          **env)
        return done.returncode, json.loads(done.stdout)

    assert who() == (0, {"username": "alice", "staff": False, "maintainer": False,
                         "teams": [], "url": live_server.url, "token_from": "config"})
    assert who(EVALSERVER_TOKEN=bob) == (0, {"username": "bob", "staff": True,
                                             "maintainer": True, "teams": [
                                                 {"slug": "site", "name": "Site team",
                                                  "role": "reviewer"}],
                                             "url": live_server.url, "token_from": "env"})
    assert who("--token", carol, EVALSERVER_TOKEN=bob)[1]["username"] == "carol"
    # after the command name too
    after = run_client("whoami", "--token", carol, "--json", url=live_server.url,
                       config_home=home, EVALSERVER_TOKEN=bob)
    assert (after.returncode, json.loads(after.stdout)["username"]) == (0, "carol")
    # the file's token is for its own server only: not sent to another URL
    elsewhere = run_client("--url", live_server.url + "/", "whoami", url="http://127.0.0.1:9",
                           config_home=home)
    other = run_client("--url", "http://127.0.0.1:9", "whoami", url="", config_home=home)
    other_after = run_client("whoami", "--url", "http://127.0.0.1:9", url="", config_home=home)
    assert (elsewhere.returncode, elsewhere.stdout.split()[0]) == (0, "alice")
    assert (other_after.returncode, other_after.stderr) == (
        3, "error: no API token: log in with `evalserver-client login`, or set "
           "EVALSERVER_TOKEN or pass --token\n")
    assert (other.returncode, other.stderr) == (
        3, "error: no API token: log in with `evalserver-client login`, or set "
           "EVALSERVER_TOKEN or pass --token\n")


@pytest.mark.django_db(transaction=True)
def test_it_logs_out_by_revoking_the_token(live_server: LiveServer, tmp_path: Path) -> None:
    alice = factories.user_create("alice")
    home = tmp_path / "config"
    # the username asked on stderr: stdout is the JSON document only
    login = run_client("login", "--json", url=live_server.url, config_home=home,
                       stdin="alice\n", EVALSERVER_PASSWORD=PASSWORD)
    old = Token.objects.get(user=alice).key

    logout = run_client("logout", "--json", url=live_server.url, config_home=home)
    again = run_client("--token", old, "whoami", url=live_server.url, config_home=home)
    again_json = run_client("--json", "--token", old, "whoami", url=live_server.url,
                            config_home=home)

    config = home / "evalserver" / "config.json"
    assert json.loads(login.stdout) == {"url": live_server.url, "username": "alice",
                                        "config": str(config)}
    assert login.stderr == "username: "
    assert (logout.returncode, json.loads(logout.stdout)) == (
        0, {"url": live_server.url, "revoked": True, "config_removed": True})
    assert not config.exists() and not Token.objects.filter(user=alice).exists()
    message = ("authentication_failed: Invalid token. The token is wrong or revoked: run "
               "`evalserver-client login` for a new one, or set EVALSERVER_TOKEN to a token "
               "from your profile page.")
    assert (again.returncode, again.stdout, again.stderr) == (3, "", f"error: {message}\n")
    assert again_json.returncode == 3
    assert json.loads(again_json.stdout) == {"error": {
        "code": "authentication_failed", "message": message, "status": 401, "exit_code": 3}}


@pytest.mark.django_db(transaction=True)
def test_it_prints_a_token_as_json_and_refuses_a_wrong_password_with_exit_5(
    live_server: LiveServer,
) -> None:
    alice = factories.user_create("alice")

    done = run_client("token", "--username", "alice", "--json", url=live_server.url,
                      EVALSERVER_PASSWORD=PASSWORD)
    wrong = run_client("login", "--username", "alice", "--json", url=live_server.url,
                       EVALSERVER_PASSWORD="wrong")

    assert json.loads(done.stdout) == {"token": Token.objects.get(user=alice).key}
    assert wrong.returncode == 5
    message = ("invalid_credentials: wrong username or password (or the account is "
               "inactive)")
    assert json.loads(wrong.stdout) == {"error": {"code": "invalid_credentials",
                                                  "message": message, "status": 400,
                                                  "exit_code": 5}}
    assert wrong.stderr == f"error: {message}\n"
