"""submit, status, submissions, and the participant's actions on a submission (docs/api.md §6)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..client import Client
from ..errors import ScoringFailed, UsageError
from ..output import describe, emit_json, releases_table, scores_table, submissions_table


def report(sub: dict[str, Any], *, as_json: bool = False) -> int:
    """The submission's line and scores; a failed scoring raises `ScoringFailed` (exit 1)."""
    if as_json:
        emit_json(sub)
    else:
        print(describe(sub))
    if sub["status"] == "failed":
        failed = ScoringFailed(f"scoring failed: {sub.get('failure_code') or 'failed'}: "
                               f"{sub.get('failure_reason') or 'no reason given'}", body=sub)
        failed.printed = as_json  # main prints no second JSON document
        raise failed
    if sub["status"] == "scored" and not as_json:
        print(scores_table(sub["scores"]))
        releases = sub.get("releases") or []
        if releases:
            print(releases_table(releases))
            for release in releases:
                print(f"{release['label_set']}: {release['message']}")
    return 0


def cmd_submit(client: Client, args: argparse.Namespace) -> int:
    files: dict[str, str] = {}
    for item in args.files:
        slug, sep, name = item.partition("=")
        if not sep or not slug or not name:
            raise UsageError(f"{item!r}: give files as EXAMPLE_SET=PATH, e.g. cifar10-test=p.npy")
        files[slug] = name
    created = client.submit(args.benchmark, args.model, files, description=args.description,
                            public=not args.private, paper_url=args.paper_url,
                            code_url=args.code_url, wait=False)
    if not args.json:
        print(f"submission {created['id']} {created['status']}: {created['page']}")
    if args.no_wait:
        if args.json:
            emit_json(created)
        return 0
    return report(client.wait(int(created["id"]), args.timeout), as_json=args.json)


def cmd_status(client: Client, args: argparse.Namespace) -> int:
    return report(client.status(args.id), as_json=args.json)


def cmd_submissions(client: Client, args: argparse.Namespace) -> int:
    found = client.submissions(limit=args.limit, benchmark=args.benchmark)
    if args.json:
        emit_json(found)
    else:
        print(submissions_table(found) if found else "(no submissions yet)")
    return 0


# What a withdrawal does, said before it is done (docs/hosts/hidden-test-sets.md).
WITHDRAW_WARNING = ("Withdrawing takes submission {id} off every board for good: it cannot be "
                    "undone (its scores stay visible to you). On a Ladder's hidden label set "
                    "your released best stays the figure a new submission must beat.")


def withdraw_confirmed(args: argparse.Namespace) -> None:
    """`withdraw` acts only with --yes or a "y" typed at a terminal; raises UsageError (exit 2)
    otherwise, before anything is sent."""
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise UsageError(WITHDRAW_WARNING.format(id=args.id) + " Pass --yes to withdraw it.")
    print(WITHDRAW_WARNING.format(id=args.id), file=sys.stderr)
    answer = input(f"Withdraw submission {args.id}? [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise UsageError(f"not withdrawn: submission {args.id} is unchanged")


def cmd_control(client: Client, args: argparse.Namespace) -> int:
    """cancel, rerun, withdraw: the same request shape and the same answer (§6.5)."""
    if args.command == "withdraw":
        withdraw_confirmed(args)
    action = {"cancel": client.cancel, "rerun": client.rerun,
              "withdraw": lambda pk: client.withdraw(pk, args.reason)}[args.command]
    sub = action(args.id)
    if getattr(args, "wait", False):
        if not args.json:
            print(describe(sub))
        return report(client.wait(int(sub["id"]), args.timeout), as_json=args.json)
    if args.json:
        emit_json(sub)
    else:
        print(describe(sub))
    return 0
