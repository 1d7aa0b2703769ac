"""benchmarks, leaderboard, compare: public reads (docs/api.md §5, §6.6)."""

from __future__ import annotations

import argparse

from ..client import Client
from ..output import benchmarks_table, compare_table, emit_json, leaderboard_table


def cmd_benchmarks(client: Client, args: argparse.Namespace) -> int:
    found = client.benchmarks()
    if args.json:
        emit_json(found)
    else:
        print(benchmarks_table(found) if found else "(no benchmarks)")
    return 0


def cmd_leaderboard(client: Client, args: argparse.Namespace) -> int:
    board = client.leaderboard(args.benchmark, sort=args.sort, version=args.version,
                               page_size=args.page_size)
    if args.json:
        emit_json(board)
        return 0
    print(f"{board['benchmark']} leaderboard, sorted by {board['sort']}; "
          "(+n) = places gained against original")
    print(leaderboard_table(board) if board["rows"] else "(no public scored submissions yet)")
    return 0


def cmd_compare(client: Client, args: argparse.Namespace) -> int:
    if args.json:  # the server's answer, with a page of the examples exactly one gets right
        emit_json(client.compare(args.first, args.second, page=args.page,
                                 label_set=args.label_set))
        return 0
    body = client.compare(args.first, args.second, page_size=1)  # the table only
    first, second = body["first"], body["second"]
    print(f"{body['benchmark']}: #{first['id']} {first['model_name']} vs "
          f"#{second['id']} {second['model_name']} (exact two-sided McNemar test on the "
          "examples only one gets right; * = not on the public board: the rank it would have)")
    print(compare_table(body) if body["label_sets"]
          else "(no public label set has a score of both)")
    return 0
