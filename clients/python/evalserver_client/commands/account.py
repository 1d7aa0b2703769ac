"""login, logout, whoami, token: the account and its API token (docs/api.md §2)."""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from ..client import Client
from ..output import emit_json


def _password(username: str) -> str:
    return os.environ.get("EVALSERVER_PASSWORD") or getpass.getpass(
        f"password for {username}: ")


def _username() -> str:
    """Asked on stderr: stdout carries only the answer (--json)."""
    print("username: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip()


def cmd_login(client: Client, args: argparse.Namespace) -> int:
    username = args.username or _username()
    done = client.login(username, _password(username))
    if args.json:
        emit_json(done)
    else:
        print(f"logged in to {done['url']} as {done['username']}; token stored in "
              f"{done['config']}")
    return 0


def cmd_logout(client: Client, args: argparse.Namespace) -> int:
    done = client.logout()
    if args.json:
        emit_json(done)
    else:
        print(f"token revoked on {done['url']}"
              + ("; config file removed" if done["config_removed"] else ""))
    return 0


def cmd_whoami(client: Client, args: argparse.Namespace) -> int:
    me = client.whoami()
    if args.json:
        emit_json(me)
    else:
        role = "staff" if me["staff"] else "maintainer" if me["maintainer"] else "participant"
        print(f"{me['username']} ({role}) on {me['url']}; token from {me['token_from']}")
        # the host teams and roles (a server from before host teams sends none)
        for team in me.get("teams", []):
            print(f"  team {team['slug']} ({team['name']}): {team['role']}")
    return 0


def cmd_token(client: Client, args: argparse.Namespace) -> int:
    token = client.token_create(args.username, _password(args.username))
    if args.json:
        emit_json({"token": token})
    else:
        print(token)
    return 0
