"""The `evalserver-client` command: log in, submit predictions, read scores and leaderboards.

    evalserver-client login --username alice        # stores the token (config.py)
    evalserver-client submit --benchmark cifar10 --model resnet50 \\
        cifar10-test=preds.npy cifar10.1-v6=preds_v6.npy     # waits, prints the scores
    evalserver-client check --benchmark cifar10 preds.npy       # as the server will check it
    evalserver-client status 42 --json

Every command takes --json (one JSON document on stdout). Exit status (errors.py): 0 ok,
1 scoring failed (`check`: a file would be refused), 2 usage, 3 authentication, 4 network,
5 refused by the server.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn

from . import __version__
from .client import Client
from .commands.account import cmd_login, cmd_logout, cmd_token, cmd_whoami
from .commands.boards import cmd_benchmark, cmd_benchmarks, cmd_compare, cmd_leaderboard
from .commands.check import cmd_check
from .commands.submissions import cmd_control, cmd_status, cmd_submissions, cmd_submit, report
from .errors import ClientError
from .output import UploadProgress

__all__ = ["main", "parser", "report"]


def program() -> str:
    """The command as the user ran it, for the usage line."""
    if Path(sys.argv[0]).name == "__main__.py":
        return "python -m evalserver_client"
    return "evalserver-client"


def _command(commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
             run: object, summary: str) -> argparse.ArgumentParser:
    sub = commands.add_parser(name, help=summary)
    # SUPPRESS: `--json`, `--url` and `--token` after the command and before it both count (no
    # default overwrites what was given before it)
    sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                     help="print one JSON document on stdout")
    sub.add_argument("--url", default=argparse.SUPPRESS, help="as before the command")
    sub.add_argument("--token", default=argparse.SUPPRESS, help="as before the command")
    sub.set_defaults(run=run)
    return sub


def _waiting(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--timeout", type=float, default=600.0,
                     help="seconds to wait for scoring (default %(default)s)")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=program(), description="Submit predictions to an "
                                  "evalserver and read scores and leaderboards.")
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    top.add_argument("--url", help="server (else env EVALSERVER_URL, else the one logged in "
                                   "to, else http://127.0.0.1:8000)")
    top.add_argument("--token", help="API token (else env EVALSERVER_TOKEN, else login's)")
    top.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    commands = top.add_subparsers(dest="command", required=True)
    login = _command(commands, "login", cmd_login, "store a token for this server "
                     "(asks the password, or reads EVALSERVER_PASSWORD)")
    login.add_argument("--username", default="")
    _command(commands, "logout", cmd_logout, "revoke the token and forget it")
    _command(commands, "whoami", cmd_whoami, "the account the token belongs to")
    listed = _command(commands, "benchmarks", cmd_benchmarks, "the benchmarks")
    listed.add_argument("--long", action="store_true",
                        help="each one's example sets and label sets, as `benchmark` shows them")
    one = _command(commands, "benchmark", cmd_benchmark, "one benchmark's example sets (the "
                   "files of a submission) and label sets")
    one.add_argument("benchmark", help="its slug, e.g. cifar10")
    board = _command(commands, "leaderboard", cmd_leaderboard, "a benchmark's leaderboard")
    board.add_argument("benchmark")
    board.add_argument("--sort", default="", help="label set to rank by (default: the "
                       "benchmark's reference label set, `original` on the built-in ones)")
    board.add_argument("--version", default="", help="label-set version hash to show")
    # the server's largest page by default: the fewest requests for a whole board
    board.add_argument("--page-size", type=int, default=1000,
                       help="rows asked per request; every page is read (default %(default)s)")
    mine = _command(commands, "submissions", cmd_submissions, "one's own submissions")
    mine.add_argument("--benchmark", default="", help="only those on this benchmark")
    mine.add_argument("--limit", type=int, default=50, help="newest first (default 50)")
    submit = _command(commands, "submit", cmd_submit, "upload predictions, wait, print the "
                      "scores")
    submit.add_argument("--benchmark", required=True, help="e.g. cifar10")
    submit.add_argument("--model", required=True, help="model name shown on the leaderboard")
    submit.add_argument("--description", default="")
    submit.add_argument("--paper-url", default="")
    submit.add_argument("--code-url", default="")
    submit.add_argument("--private", action="store_true", help="keep off the leaderboard")
    submit.add_argument("--no-wait", action="store_true", help="do not wait for the scores")
    submit.add_argument("--progress", action="store_true",
                        help="show upload progress on stderr (the default on a terminal)")
    _waiting(submit)
    submit.add_argument("files", nargs="+", metavar="EXAMPLE_SET=FILE",
                        help="predictions per example set, e.g. cifar10-test=preds.npy; or "
                             "a model instead: checkpoint=model.onnx")
    check = _command(commands, "check", cmd_check, "check prediction files as the server "
                     "will, without uploading them (exit 1 when it would refuse one)")
    check.add_argument("--benchmark", required=True, help="e.g. cifar10")
    check.add_argument("files", nargs="+", metavar="[EXAMPLE_SET=]FILE",
                       help="predictions per example set, e.g. cifar10-test=preds.npy; a FILE "
                            "alone is the benchmark's main example set's")
    status = _command(commands, "status", cmd_status, "a submission's status and scores")
    status.add_argument("id", type=int)
    cancel = _command(commands, "cancel", cmd_control, "cancel one's own queued submission")
    cancel.add_argument("id", type=int)
    rerun = _command(commands, "rerun", cmd_control, "run again one's own submission that "
                     "failed through the server's fault (no quota cost)")
    rerun.add_argument("id", type=int)
    rerun.add_argument("--wait", action="store_true", help="wait for it and print the scores")
    _waiting(rerun)
    withdraw = _command(commands, "withdraw", cmd_control, "take a submission off every "
                        "board for good (its scores stay for its owner)")
    withdraw.add_argument("id", type=int)
    withdraw.add_argument("--reason", default="", help="why (required of a maintainer "
                                                       "withdrawing someone else's)")
    withdraw.add_argument("--yes", action="store_true", help="withdraw without asking first "
                          "(it cannot be undone); needed where no one can answer (a script)")
    compare = _command(commands, "compare", cmd_compare, "two scored submissions side by "
                       "side, with a McNemar test per label set")
    compare.add_argument("first", type=int)
    compare.add_argument("second", type=int)
    compare.add_argument("--label-set", default="",
                         help="with --json: the label set whose examples to list")
    compare.add_argument("--page", type=int, default=1, help="with --json: the examples' page")
    token = _command(commands, "token", cmd_token, "print an API token (asks the password, "
                     "or reads EVALSERVER_PASSWORD)")
    token.add_argument("--username", required=True)
    return top


def fail(exc: ClientError, as_json: bool) -> NoReturn:
    """The error in one line on stderr; with --json also as a document on stdout."""
    print(f"error: {exc}", file=sys.stderr)
    if as_json and not exc.printed:
        print(json.dumps({"error": {"code": exc.code, "message": str(exc),
                                    "status": exc.status, "exit_code": exc.exit_code}},
                         indent=2, sort_keys=True))
    raise SystemExit(exc.exit_code)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)  # a usage error exits 2 here
    show = getattr(args, "progress", False) or (args.command == "submit"
                                                and sys.stderr.isatty())
    try:
        client = Client(args.url, args.token, progress=UploadProgress() if show else None,
                        notice=lambda line: print(line, file=sys.stderr))
        return int(args.run(client, args))
    except ClientError as exc:
        fail(exc, args.json)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
