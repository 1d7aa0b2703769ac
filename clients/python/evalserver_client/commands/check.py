"""check: prediction files checked on this machine as the server checks an upload, before
sending them (the server's docs/participants/scoring-locally.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checks.submission import SubmissionVerdict, submission_check
from ..client import Client
from ..errors import SCORING_FAILED, UsageError
from ..output import emit_json
from .boards import benchmark_found


def check_files(items: list[str], main: str) -> dict[str, Path]:
    """EXAMPLE_SET=PATH pairs; a bare PATH is the benchmark's main example set's file."""
    files: dict[str, Path] = {}
    for item in items:
        slug, sep, name = item.partition("=")
        slug, name = (slug, name) if sep and slug else (main, item)
        if slug == "checkpoint":
            raise UsageError("check takes prediction files; the server checks a checkpoint "
                             "when it is submitted")
        path = Path(name).expanduser()
        if not path.is_file():
            raise UsageError(f"{name}: no such file")
        if slug in files:
            raise UsageError(f"two files for {slug}: give one file per example set")
        files[slug] = path
    return files


def verdict_lines(verdict: SubmissionVerdict, url: str) -> list[str]:
    lines = []
    for file in verdict.files:
        where = f"{file.example_set}={file.path}"
        if file.problem is None:
            assert file.content is not None
            lines.append(f"{where}: ok, {file.content.describe()}")
        else:
            lines.append(f"{where}: {file.problem.code}: {file.problem}")
        lines += [f"  note: {note}" for note in file.notes]
    lines += [f"{verdict.benchmark}: {p.code}: {p}" for p in verdict.problems]
    refused = sum(f.problem is not None for f in verdict.files)
    if verdict.ok:
        pairs = " ".join(f"{f.example_set}={f.path}" for f in verdict.files)
        lines += [f"{url} would accept these files; submit them with",
                  f"  evalserver-client submit --benchmark {verdict.benchmark} --model NAME "
                  f"{pairs}"]
    elif refused:
        lines.append(f"{url} would refuse this submission: {refused} of {len(verdict.files)} "
                     f"file{'s' * (len(verdict.files) != 1)} refused")
    else:
        lines.append(f"{url} would refuse this submission")
    return lines


def cmd_check(client: Client, args: argparse.Namespace) -> int:
    benchmark = benchmark_found(client, args.benchmark)
    verdict = submission_check(benchmark,
                               check_files(args.files, str(benchmark["main_image_set"])))
    if args.json:
        emit_json(verdict.as_json())
    else:
        print("\n".join(verdict_lines(verdict, client.url)))
    return 0 if verdict.ok else SCORING_FAILED
