"""benchmarks, benchmark, leaderboard, compare: public reads (docs/api.md §5, §6.6)."""

from __future__ import annotations

import argparse
from typing import Any

from ..client import Client
from ..errors import RefusedError
from ..output import (
    benchmark_detail,
    benchmarks_table,
    compare_table,
    emit_json,
    leaderboard_heading,
    leaderboard_table,
)


def benchmark_found(client: Client, slug: str) -> dict[str, Any]:
    """The API's benchmark; its 404 says where the slugs are listed."""
    try:
        return client.benchmark(slug)
    except RefusedError as exc:
        if exc.status == 404:
            raise RefusedError(f"{exc}; `evalserver-client benchmarks` lists them",
                               status=exc.status, body=exc.body, code=exc.code) from exc
        raise


def cmd_benchmarks(client: Client, args: argparse.Namespace) -> int:
    found = client.benchmarks()
    if args.json:
        emit_json(found)
    elif not found:
        print("(no benchmarks)")
    elif args.long:
        print("\n\n".join(benchmark_detail(b) for b in found))
    else:
        print(benchmarks_table(found))
        print("\nEach one's example sets and label sets: evalserver-client benchmark SLUG "
              "(or benchmarks --long)")
    return 0


def cmd_benchmark(client: Client, args: argparse.Namespace) -> int:
    found = benchmark_found(client, args.benchmark)
    if args.json:
        emit_json(found)
    else:
        print(benchmark_detail(found))
    return 0


def cmd_leaderboard(client: Client, args: argparse.Namespace) -> int:
    board = client.leaderboard(args.benchmark, sort=args.sort, version=args.version,
                               page_size=args.page_size)
    if args.json:
        emit_json(board)
        return 0
    print(leaderboard_heading(board))
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
