"""The `evalserver-client` command: submit predictions, read scores and leaderboards.

    evalserver-client token --username alice          # prints an API token
    export EVALSERVER_TOKEN=...  EVALSERVER_URL=https://evalserver.example.org
    evalserver-client submit --benchmark cifar10 --model resnet50 \\
        cifar10-test=preds.npy cifar10.1-v6=preds_v6.npy     # waits, prints the scores
    evalserver-client status 42
    evalserver-client cancel 42                     # while it is still queued
    evalserver-client rerun 42                      # failed through the server's fault
    evalserver-client withdraw 42 --reason "..."    # off every board, for good
    evalserver-client leaderboard cifar10 --sort corrected

`python -m evalserver_client ...` does the same without installing the console script. Files
are streamed from disk, never read whole into memory. Exit status 1 on any failure, with the
server's message.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

from .api import Api, ClientError

DEFAULT_URL = "http://127.0.0.1:8000"


def program() -> str:
    """The command as the user ran it, for the usage line and the hints in error messages."""
    if Path(sys.argv[0]).name == "__main__.py":
        return "python -m evalserver_client"
    return "evalserver-client"


# ---------------------------------------------------------------- printing


def percent(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to width: the first `left` ones aligned left, the others right."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in [header, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def scores_table(scores: dict[str, Any]) -> str:
    rows = []
    for slug, s in scores.items():
        ci = f"[{percent(s.get('ci_low'))}, {percent(s.get('ci_high'))}]"
        rows.append([slug, percent(s.get("accuracy")), f"{s.get('correct')}/{s.get('total')}",
                     ci if s.get("ci_low") is not None else "-"])
    return table(["label set", "accuracy", "correct/total", "95% CI"], rows)


def releases_table(releases: list[dict[str, Any]]) -> str:
    """A hidden label set's released figures: the only figures of it the server gives."""
    rows = [[r["label_set"], percent(r.get("released")), percent(r.get("best")), r["mechanism"]]
            for r in releases]
    return table(["hidden label set", "released", "your best", "mechanism"], rows)


def leaderboard_table(board: dict[str, Any]) -> str:
    slugs = [c["slug"] for c in board["columns"]]
    rows = []
    for row in board["rows"]:
        cells = []
        for slug in slugs:
            shift = row["rank_shift"].get(slug, 0)
            arrow = f" ({'+' if shift > 0 else ''}{shift})" if shift else ""
            cells.append(percent(row["scores"].get(slug, {}).get("accuracy")) + arrow)
        rank = row["ranks"].get(board["sort"])
        rows.append([str(rank or "-"), row["model_name"], str(row["submission_id"]), *cells])
    return table(["rank", "model", "id", *slugs], rows, left=2)


def compare_table(body: dict[str, Any]) -> str:
    """Per label set: both accuracies (rank), the difference, the discordant counts, p."""
    def side(figures: dict[str, Any]) -> str:
        rank = figures.get("rank")
        where = "" if rank is None else f" #{rank}" + ("" if figures["on_board"] else "*")
        return percent(figures.get("accuracy")) + where

    rows = []
    for c in body["label_sets"]:
        diff = c.get("difference")
        p = c.get("p_value")
        rows.append([c["slug"], side(c["first"]), side(c["second"]),
                     "-" if diff is None else f"{100 * diff:+.2f} pt",
                     "-" if c.get("only_first") is None
                     else f"{c['only_first']} / {c['only_second']}",
                     "-" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")])
    return table(["label set", f"#{body['first']['id']}", f"#{body['second']['id']}",
                  "difference", "only first / only second", "McNemar p"], rows)


def describe(sub: dict[str, Any]) -> str:
    withdrawn = ""
    if sub.get("withdrawn"):
        reason = sub.get("withdrawn_reason")
        withdrawn = ", withdrawn" + (f" ({reason})" if reason else "")
    return (f"submission {sub['id']}: {sub['model_name']} on {sub['benchmark']} - "
            f"{sub['status']}{withdrawn}")


# ---------------------------------------------------------------- commands


def _need_token(api: Api) -> None:
    if not api.token:
        raise ClientError("no API token: set EVALSERVER_TOKEN or pass --token (get one with "
                          f"`{program()} token --username NAME`)")


def wait_for(api: Api, submission_id: int, timeout: float) -> dict[str, Any]:
    deadline, delay = time.monotonic() + timeout, 0.5
    while True:
        sub: dict[str, Any] = api.request("GET", f"/api/submissions/{submission_id}/")
        if sub["status"] in ("scored", "failed", "cancelled"):
            return sub
        if time.monotonic() + delay > deadline:
            raise ClientError(f"still {sub['status']} after {timeout:g} s; check later with "
                              f"`{program()} status {submission_id}`")
        time.sleep(delay)
        delay = min(delay * 1.5, 10.0)


def report(sub: dict[str, Any]) -> int:
    print(describe(sub))
    if sub["status"] == "failed":
        raise ClientError(f"scoring failed: {sub.get('failure_code') or 'failed'}: "
                          f"{sub.get('failure_reason') or 'no reason given'}")
    if sub["status"] == "scored":
        print(scores_table(sub["scores"]))
        releases = sub.get("releases") or []
        if releases:
            print(releases_table(releases))
            for release in releases:
                print(f"{release['label_set']}: {release['message']}")
    return 0


def cmd_submit(api: Api, args: argparse.Namespace) -> int:
    _need_token(api)
    files: dict[str, Path] = {}
    for item in args.files:
        slug, sep, name = item.partition("=")
        if not sep or not slug or not name:
            raise ClientError(f"{item!r}: give files as IMAGE_SET=PATH, e.g. cifar10-test=p.npy")
        path = Path(name).expanduser()
        if not path.is_file() or not os.access(path, os.R_OK):
            raise ClientError(f"{name}: no such file (or not readable)")
        files[slug] = path
    fields = {"benchmark": args.benchmark, "model_name": args.model,
              "description": args.description, "public": "false" if args.private else "true",
              "paper_url": args.paper_url, "code_url": args.code_url}
    created = api.upload("/api/submissions/", fields, files)
    print(f"submission {created['id']} {created['status']}: {created['url']}")
    if args.no_wait:
        return 0
    return report(wait_for(api, int(created["id"]), args.timeout))


def cmd_status(api: Api, args: argparse.Namespace) -> int:
    return report(api.request("GET", f"/api/submissions/{args.id}/"))


def cmd_cancel(api: Api, args: argparse.Namespace) -> int:
    _need_token(api)
    print(describe(api.request("POST", f"/api/submissions/{args.id}/cancel/")))
    return 0


def cmd_rerun(api: Api, args: argparse.Namespace) -> int:
    _need_token(api)
    sub = api.request("POST", f"/api/submissions/{args.id}/rerun/")
    print(describe(sub))
    if not args.wait:
        return 0
    return report(wait_for(api, int(sub["id"]), args.timeout))


def cmd_withdraw(api: Api, args: argparse.Namespace) -> int:
    _need_token(api)
    print(describe(api.request("POST", f"/api/submissions/{args.id}/withdraw/",
                               form={"reason": args.reason})))
    return 0


def cmd_leaderboard(api: Api, args: argparse.Namespace) -> int:
    query = {"sort": args.sort, **({"version": args.version} if args.version else {}),
             "page_size": str(args.page_size)}
    path = f"/api/benchmarks/{quote(args.benchmark)}/leaderboard/"
    board = api.request("GET", path, query=query)
    # The board comes in pages (docs/api.md §5.2): read them all, in order. A server from
    # before the paging sends the whole board with no `next`.
    page = 1
    while board.get("next"):
        page += 1
        more = api.request("GET", path, query={**query, "page": str(page)})
        board["rows"] += more["rows"]
        board["next"] = more.get("next")
    print(f"{board['benchmark']} leaderboard, sorted by {board['sort']}; "
          "(+n) = places gained against original")
    print(leaderboard_table(board) if board["rows"] else "(no public scored submissions yet)")
    return 0


def cmd_compare(api: Api, args: argparse.Namespace) -> int:
    query = {"page_size": "1"}  # the table only (the example list is paged: --json prints it)
    if args.json:
        query = {"page": str(args.page), **({"label_set": args.label_set}
                                            if args.label_set else {})}
    body = api.request("GET", f"/api/submissions/{args.first}/compare/{args.second}/",
                       query=query)
    if args.json:
        print(json.dumps(body, indent=2))
        return 0
    first, second = body["first"], body["second"]
    print(f"{body['benchmark']}: #{first['id']} {first['model_name']} vs "
          f"#{second['id']} {second['model_name']} (exact two-sided McNemar test on the "
          "examples only one gets right; * = not on the public board: the rank it would have)")
    print(compare_table(body) if body["label_sets"]
          else "(no public label set has a score of both)")
    return 0


def cmd_token(api: Api, args: argparse.Namespace) -> int:
    password = os.environ.get("EVALSERVER_PASSWORD") or getpass.getpass(
        f"password for {args.username}: ")
    answer = api.request("POST", "/api/auth/token/", auth=False,
                         form={"username": args.username, "password": password})
    print(answer["token"])
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=program(),
                                  description="Submit predictions to an evalserver and read "
                                              "scores and leaderboards.")
    top.add_argument("--url", default=os.environ.get("EVALSERVER_URL", DEFAULT_URL),
                     help="server (env EVALSERVER_URL; default %(default)s)")
    top.add_argument("--token", default=os.environ.get("EVALSERVER_TOKEN"),
                     help="API token (env EVALSERVER_TOKEN)")
    commands = top.add_subparsers(dest="command", required=True)
    submit = commands.add_parser("submit", help="upload predictions, wait, print the scores")
    submit.add_argument("--benchmark", required=True, help="e.g. cifar10")
    submit.add_argument("--model", required=True, help="model name shown on the leaderboard")
    submit.add_argument("--description", default="")
    submit.add_argument("--paper-url", default="")
    submit.add_argument("--code-url", default="")
    submit.add_argument("--private", action="store_true", help="keep off the leaderboard")
    submit.add_argument("--no-wait", action="store_true", help="do not wait for the scores")
    submit.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait for scoring (default %(default)s)")
    submit.add_argument("files", nargs="+", metavar="IMAGE_SET=FILE",
                        help="predictions per image set, e.g. cifar10-test=preds.npy; or "
                             "a model instead: checkpoint=model.onnx")
    submit.set_defaults(run=cmd_submit)
    status = commands.add_parser("status", help="a submission's status and scores")
    status.add_argument("id", type=int)
    status.set_defaults(run=cmd_status)
    cancel = commands.add_parser("cancel", help="cancel one's own submission while it is queued")
    cancel.add_argument("id", type=int)
    cancel.set_defaults(run=cmd_cancel)
    rerun = commands.add_parser("rerun", help="run again one's own submission that failed "
                                              "through the server's fault (no quota cost)")
    rerun.add_argument("id", type=int)
    rerun.add_argument("--wait", action="store_true", help="wait for it and print the scores")
    rerun.add_argument("--timeout", type=float, default=600.0,
                       help="seconds to wait with --wait (default %(default)s)")
    rerun.set_defaults(run=cmd_rerun)
    withdraw = commands.add_parser("withdraw", help="take a submission off every board for "
                                                    "good (its scores stay for its owner)")
    withdraw.add_argument("id", type=int)
    withdraw.add_argument("--reason", default="", help="why (required of a maintainer "
                                                       "withdrawing someone else's)")
    withdraw.set_defaults(run=cmd_withdraw)
    board = commands.add_parser("leaderboard", help="a benchmark's public leaderboard")
    board.add_argument("benchmark")
    board.add_argument("--sort", default="original", help="label set to rank by")
    board.add_argument("--version", default="", help="label-set version hash to show")
    # the server's largest page by default: the fewest requests for a whole board
    board.add_argument("--page-size", type=int, default=1000,
                       help="rows asked per request; every page is read (default %(default)s)")
    board.set_defaults(run=cmd_leaderboard)
    compare = commands.add_parser("compare", help="two scored submissions side by side, "
                                                  "with a McNemar test per label set")
    compare.add_argument("first", type=int)
    compare.add_argument("second", type=int)
    compare.add_argument("--json", action="store_true",
                         help="print the server's answer: with a page of the examples "
                              "exactly one gets right")
    compare.add_argument("--label-set", default="",
                         help="with --json: the label set whose examples to list")
    compare.add_argument("--page", type=int, default=1, help="with --json: the examples' page")
    compare.set_defaults(run=cmd_compare)
    token = commands.add_parser("token", help="print an API token (asks for the password, "
                                              "or reads EVALSERVER_PASSWORD)")
    token.add_argument("--username", required=True)
    token.set_defaults(run=cmd_token)
    return top


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        api = Api(args.url, args.token)
        return int(args.run(api, args))
    except ClientError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted")
