"""Download the public data files the benchmarks read, as listed in data-sources.toml.

Each file is fetched into `<path>.part` beside its final place, resumed from where an
interrupted download stopped (HTTP Range), checked against the manifest's size and sha256,
and only then renamed to its final name: the data directory never holds a partial or wrong
file under a name the server reads. A file whose bytes differ from the manifest is deleted
and named with both checksums. A source that sends nothing for a while (the stall timeout) or
has not delivered the whole file by a deadline is given up, keeping the part for the next
source or run. No Django here: `manage.py fetch_data` reads the settings and prints; this
module only reads the manifest and moves bytes.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import socket
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlparse

CHUNK = 256 * 1024
USER_AGENT = "evalserver-fetch-data/1"
_SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class ManifestError(Exception):
    """The manifest cannot be read, or names something it does not have."""


class FetchError(Exception):
    """One file could not be fetched; the message names it."""


# The slowest delivery the default deadline allows for a large file, in bytes a second.
DEADLINE_MIN_RATE = 10_000


@dataclass(frozen=True)
class FetchLimits:
    """When a source is given up. Without both, a server that trickles a byte now and then
    keeps a download (and `manage.py fetch_data`, and the deployment that runs it) going for
    ever: each byte resets a plain socket timeout."""

    stall: float = 30.0  # seconds with nothing received: connecting, the headers, the body
    deadline: float = 300.0  # seconds one source gets for one file, at least

    def deadline_for(self, size: int) -> float:
        """The deadline of a file of `size` bytes: `deadline`, or more for a file too large
        to arrive within it at DEADLINE_MIN_RATE."""
        return max(self.deadline, float(math.ceil(size / DEADLINE_MIN_RATE)))


class _DeadlinePassed(Exception):
    pass


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the data directory, with / separators
    urls: tuple[str, ...]  # the public source, then its mirrors
    size: int
    sha256: str
    license: str

    @property
    def benchmark(self) -> str:
        return self.path.split("/", 1)[0]


def manifest_read(path: Path) -> tuple[DataFile, ...]:
    """Every entry of the manifest, checked for form (paths inside the data directory)."""
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("file", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"cannot read the manifest {path}: {exc}") from exc
    files: list[DataFile] = []
    for number, entry in enumerate(entries, start=1):
        where = f"{path.name}, entry {number}"
        try:
            relative, url, size, sha256 = (entry["path"], entry["url"], entry["size"],
                                           entry["sha256"])
            mirrors, license_ = entry.get("mirrors", []), entry["license"]
        except KeyError as exc:
            raise ManifestError(f"{where}: no {exc.args[0]!r}") from None
        pure = PurePosixPath(relative)
        if pure.is_absolute() or ".." in pure.parts or len(pure.parts) < 2:
            raise ManifestError(f"{where}: path {relative!r} is not inside a benchmark folder")
        if not (isinstance(size, int) and size > 0 and isinstance(sha256, str)
                and _SHA256.match(sha256)):
            raise ManifestError(f"{where} ({relative}): size or sha256 is malformed")
        urls = (url, *mirrors)
        if not all(urlparse(u).scheme in ("http", "https") for u in urls):
            raise ManifestError(f"{where} ({relative}): a URL is not http(s)")
        files.append(DataFile(relative, urls, size, sha256, license_))
    if not files:
        raise ManifestError(f"the manifest {path} lists no file")
    return tuple(files)


def data_files_select(files: Sequence[DataFile], *,
                      benchmarks: Iterable[str] | None) -> tuple[DataFile, ...]:
    """The files of these benchmarks (all when None); an unknown one is refused by name."""
    if benchmarks is None:
        return tuple(files)
    wanted = set(benchmarks)
    known = {f.benchmark for f in files}
    unknown = sorted(wanted - known)
    if unknown:
        raise ManifestError(f"unknown benchmark(s) {', '.join(unknown)}; the manifest has "
                            f"{', '.join(sorted(known))}")
    return tuple(f for f in files if f.benchmark in wanted)


def mirror_url(base_url: str, path: str) -> str:
    """The URL of `path` on a mirror laid out like the data directory."""
    return base_url.rstrip("/") + "/" + quote(path)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def data_file_state(dest: Path, data_file: DataFile) -> str:
    """'present' (right size and sha256), 'missing' or 'differs'."""
    target = dest / data_file.path
    if not target.is_file():
        return "missing"
    if target.stat().st_size != data_file.size or file_sha256(target) != data_file.sha256:
        return "differs"
    return "present"


def _download(url: str, part: Path, data_file: DataFile, progress: Callable[[int], None],
              limits: FetchLimits) -> None:
    """Bring `part` to the whole file's length from `url`, resuming what it already holds.

    `progress` gets the bytes added (negative when a server ignores the Range and the part
    starts over). A download cut short, stalled or past its deadline keeps its part and raises
    FetchError. The deadline is checked as bytes arrive, so it is overrun by less than the
    stall timeout."""
    start = part.stat().st_size if part.exists() else 0
    if start >= data_file.size:
        return  # complete (or too long): the checksum decides
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if start:
        headers["Range"] = f"bytes={start}-"
    request = urllib.request.Request(url, headers=headers)
    deadline = limits.deadline_for(data_file.size)
    give_up_at = time.monotonic() + deadline
    written = start
    try:
        with urllib.request.urlopen(request, timeout=limits.stall) as response:
            content_range = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            resumed = (start > 0 and response.status == 206 and content_range is not None
                       and int(content_range.group(1)) == start)
            if start and not resumed:
                progress(-start)  # the server sent the whole file: start over
                written = 0
            with part.open("ab" if resumed else "wb") as out:
                # read1: whatever has arrived, so that a trickle is written (and resumable)
                # and the deadline checked as it comes; read() would wait for a whole chunk.
                # A wrong source may be much larger than the file: stop well past its size.
                while written <= 2 * data_file.size + CHUNK and (
                        chunk := response.read1(CHUNK)):
                    out.write(chunk)
                    written += len(chunk)
                    progress(len(chunk))
                    if written < data_file.size and time.monotonic() >= give_up_at:
                        raise _DeadlinePassed
                out.flush()
                os.fsync(out.fileno())
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{data_file.path}: {url} answered {exc.code} {exc.reason}") from None
    except _DeadlinePassed:
        raise FetchError(_interrupted(data_file, url, part,
                                      f"deadline: not complete within {deadline:g} s")) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        # ValueError: http.client's IncompleteRead and bad status lines
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError):  # connecting or reading (socket.timeout)
            reason = f"stall timeout: nothing received for {limits.stall:g} s"
        raise FetchError(_interrupted(data_file, url, part, str(reason))) from None
    if written < data_file.size:
        # http.client returns no error when the connection closes early: the length tells
        raise FetchError(_interrupted(data_file, url, part, "the connection closed"))


def _interrupted(data_file: DataFile, url: str, part: Path, reason: str) -> str:
    have = part.stat().st_size if part.exists() else 0
    return (f"{data_file.path}: download from {url} interrupted after {have:,} of "
            f"{data_file.size:,} bytes ({reason}); run again to resume")


def data_file_fetch(data_file: DataFile, *, dest: Path, urls: Sequence[str],
                    progress: Callable[[int], None],
                    limits: FetchLimits = FetchLimits()) -> str:
    """Fetch one file into `dest` and verify it; returns the URL it came from.

    Each URL is tried in turn, each with its own deadline, until one delivers the whole file
    (resuming what the ones before it delivered). Bytes that do not match the manifest are
    deleted and the FetchError names expected and actual sha256."""
    target = dest / data_file.path
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    if part.exists():
        progress(part.stat().st_size)  # what an earlier run left, resumed below
    failures: list[str] = []
    for url in urls:
        try:
            _download(url, part, data_file, progress, limits)
        except FetchError as exc:
            failures.append(str(exc))
            continue
        actual = file_sha256(part)
        if actual != data_file.sha256:
            size = part.stat().st_size
            part.unlink()
            raise FetchError(
                f"{data_file.path}: checksum mismatch (from {url}): expected sha256 "
                f"{data_file.sha256} ({data_file.size:,} bytes), got sha256 {actual} "
                f"({size:,} bytes); the download was deleted")
        os.replace(part, target)
        return url
    raise FetchError("; ".join(failures))


def url_endpoint(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80)


def data_files_unreachable(files: Iterable[DataFile], *, urls: Callable[[DataFile], Sequence[str]],
                           timeout: float = 3.0) -> tuple[list[DataFile], list[str]]:
    """The files none of whose URLs' hosts accepts a TCP connection within `timeout`, and the
    hosts (host:port) that did not answer."""
    files = list(files)
    endpoints = {url_endpoint(u) for f in files for u in urls(f)}
    silent = set()
    for host, port in sorted(endpoints):
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError:
            silent.add((host, port))
    stuck = [f for f in files if all(url_endpoint(u) in silent for u in urls(f))]
    return stuck, [f"{host}:{port}" for host, port in sorted(silent)]
