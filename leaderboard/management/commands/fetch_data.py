"""`python manage.py fetch_data`: download the public data files into the data directory.

The files, their sources, sizes, checksums and licenses are listed in data-sources.toml at the
project root; the work is `leaderboard.catalog.data_fetch`. Files already present with the
right checksum are left alone, so it is safe to run again (and it resumes an interrupted run).
"""

from __future__ import annotations

import sys
from argparse import ArgumentTypeError
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from leaderboard.catalog.data_fetch import (
    DEADLINE_MIN_RATE,
    DataFile,
    FetchError,
    FetchLimits,
    ManifestError,
    data_file_fetch,
    data_file_state,
    data_files_select,
    data_files_unreachable,
    manifest_read,
    mirror_url,
)


def _seconds(value: str) -> float:
    """A positive number of seconds (argparse type)."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ArgumentTypeError(f"not a positive number of seconds: {value!r}")
    return seconds


class Command(BaseCommand):
    help = (
        "Download every public file the benchmarks read (data-sources.toml) into the data "
        "directory, resuming partial downloads and verifying each sha256. Files already "
        "present with the right checksum are skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dest", type=Path, default=None,
            help="the data directory (default: the EVALSERVER_DATA_DIR setting)")
        parser.add_argument(
            "--base-url", default=None, metavar="URL",
            help="fetch every file from this one mirror, laid out like the data directory "
                 "(URL/cifar10/original_labels.npy, ...), instead of its public source "
                 "(default: the EVALSERVER_DATA_BASE_URL setting, when set)")
        parser.add_argument(
            "--only", nargs="+", metavar="BENCHMARK", default=None,
            help="only the files of these benchmarks (the data directory's folders: imagenet, "
                 "cifar10, mnist, cifar100, caltech256, 20news, imdb)")
        parser.add_argument(
            "--check", action="store_true",
            help="download nothing: name the files that are missing or differ, and exit 1 "
                 "if there are any")
        parser.add_argument(
            "--reachable", action="store_true",
            help="download nothing: exit 0 if every file has a source host that accepts a "
                 "connection within 3 s, else 1 (serve.sh asks this before fetching)")
        parser.add_argument(
            "--manifest", type=Path, default=None,
            help="the manifest (default: data-sources.toml at the project root)")
        # --timeout: its earlier name, still accepted
        parser.add_argument(
            "--stall-timeout", "--timeout", type=_seconds, default=None, metavar="SECONDS",
            help="give a source up after this many seconds with nothing received (default: "
                 "the EVALSERVER_FETCH_STALL_TIMEOUT setting, here "
                 f"{settings.EVALSERVER_FETCH_STALL_TIMEOUT})")
        parser.add_argument(
            "--deadline", type=_seconds, default=None, metavar="SECONDS",
            help="give a source up when it has not delivered a file within this many "
                 f"seconds, or one per {DEADLINE_MIN_RATE // 1000} kB of a larger file "
                 "(default: the EVALSERVER_FETCH_DEADLINE setting, here "
                 f"{settings.EVALSERVER_FETCH_DEADLINE})")
        parser.add_argument(
            "--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        dest: Path = (options["dest"] or Path(settings.EVALSERVER_DATA_DIR)).resolve()
        base_url: str | None = options["base_url"] or settings.EVALSERVER_DATA_BASE_URL
        manifest = options["manifest"] or Path(settings.BASE_DIR) / "data-sources.toml"
        try:
            files = data_files_select(manifest_read(manifest), benchmarks=options["only"])
        except ManifestError as exc:
            raise CommandError(str(exc)) from exc

        def urls(data_file: DataFile) -> tuple[str, ...]:
            return (mirror_url(base_url, data_file.path),) if base_url else data_file.urls

        if options["reachable"]:
            stuck, silent = data_files_unreachable(files, urls=urls)
            if stuck:
                raise CommandError(f"{len(stuck)} of {len(files)} file(s) cannot be fetched now: "
                                   f"no answer from {', '.join(silent)}")
            return

        states = {f.path: data_file_state(dest, f) for f in files}
        wanted = [f for f in files if states[f.path] != "present"]
        verbosity = int(options["verbosity"])
        if options["check"]:
            for benchmark in dict.fromkeys(f.benchmark for f in files):
                lacking = [f.path for f in wanted if f.benchmark == benchmark]
                if lacking and verbosity >= 2:
                    self.stdout.write("\n".join(f"{states[path]}: {path}" for path in lacking))
                elif lacking:
                    total = sum(f.benchmark == benchmark for f in files)
                    self.stdout.write(f"{benchmark}: {len(lacking)} of {total} files missing or "
                                      f"different (first: {lacking[0]}; -v 2 lists them)")
            if wanted:
                raise CommandError(f"{len(wanted)} of {len(files)} data file(s) missing or "
                                   f"different in {dest}; run `manage.py fetch_data`")
            self.stdout.write(f"all {len(files)} data files present in {dest}")
            return
        if wanted:
            self.stdout.write(f"Fetching {len(wanted)} file(s), "
                              f"{sum(f.size for f in wanted) / 1e6:.1f} MB, into {dest} from "
                              f"{base_url or 'their public sources (data-sources.toml)'}")
        limits = FetchLimits(
            stall=options["stall_timeout"] or float(settings.EVALSERVER_FETCH_STALL_TIMEOUT),
            deadline=options["deadline"] or float(settings.EVALSERVER_FETCH_DEADLINE))
        self._fetch(wanted, dest=dest, urls=urls, states=states, verbosity=verbosity,
                    limits=limits, progress=not options["no_progress"])
        self.stdout.write(self.style.SUCCESS(
            f"{len(files)} data files present in {dest} "
            f"({len(wanted)} fetched, {len(files) - len(wanted)} already there)"))

    def _say(self, text: str, *, error: bool = False) -> None:
        """A line to stdout (stderr for an error) without breaking the progress bar."""
        with tqdm.external_write_mode(file=sys.stderr):
            if error:
                self.stderr.write(text)
            else:
                self.stdout.write(text)

    def _fetch(self, wanted: list[DataFile], *, dest: Path,
               urls: Callable[[DataFile], tuple[str, ...]], states: dict[str, str],
               verbosity: int, limits: FetchLimits, progress: bool) -> None:
        failures: list[str] = []
        with tqdm(total=sum(f.size for f in wanted), unit="B", unit_scale=True,
                  unit_divisor=1024, file=sys.stderr, disable=None if progress else True,
                  desc="fetch_data") as bar:
            for data_file in wanted:
                if states[data_file.path] == "differs":
                    self._say(f"{data_file.path}: differs from the manifest; fetching it again")
                try:
                    source = data_file_fetch(data_file, dest=dest, urls=urls(data_file),
                                             progress=bar.update, limits=limits)
                except FetchError as exc:
                    self._say(f"error: {exc}", error=True)
                    failures.append(data_file.path)
                    continue
                if verbosity >= 2:
                    self._say(f"fetched {data_file.path} ({data_file.size:,} bytes, "
                              f"{data_file.license}) from {source}")
        if failures:
            raise CommandError(f"{len(failures)} of {len(wanted)} file(s) not fetched: "
                               f"{', '.join(failures)} (see the errors above)")
