"""A `.zip` bundle, extracted safely into a folder of the caller's (docs/bundles.md §7).

Refused before anything is written: an entry name that is absolute, has a `..` part, a
backslash, a drive letter or a control character; a link; an encrypted entry; two entries of
one name; more entries, more bytes or a higher compression ratio than `ZipLimits` allow (a zip
bomb). While extracting, the bytes actually written are counted again (declared sizes can
lie), and every entry's first bytes are checked for a pickle. The archive holds exactly one
manifest (`*.toml`); its folder is the bundle's root.
"""

from __future__ import annotations

import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .data_files import refuse_pickle, zip_directory_check
from .errors import BundleError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ZipLimits:
    max_entries: int = 10_000
    max_entry_bytes: int = 1 << 30  # uncompressed, one entry
    max_total_bytes: int = 2 << 30  # uncompressed, all entries
    max_ratio: int = 200  # uncompressed / compressed, per entry and overall ...
    ratio_floor_bytes: int = 1 << 20  # ... for entries (and archives) larger than this


def _unsafe(name: str, why: str) -> BundleError:
    return BundleError("zip_unsafe_entry", f"entry {name!r}: {why}", file=name)


def _bomb(archive: str, why: str) -> BundleError:
    return BundleError("zip_bomb", f"refused as a possible zip bomb: {why}", file=archive)


def check_entry_name(info: zipfile.ZipInfo) -> PurePosixPath:
    name = info.filename
    if not name or _CONTROL.search(name):
        raise _unsafe(name, "an empty name or a control character")
    if "\\" in name:
        raise _unsafe(name, "a backslash in the name")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise _unsafe(name, "an absolute path")
    parts = name.rstrip("/").split("/")
    if any(part == ".." for part in parts):
        raise _unsafe(name, "a `..` part leads out of the bundle")
    if any(part in ("", ".") for part in parts):
        raise _unsafe(name, "an empty or `.` part")
    mode = info.external_attr >> 16
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise _unsafe(name, "a link or special file; only plain files are accepted")
    if info.flag_bits & 0x1:
        raise _unsafe(name, "encrypted")
    return PurePosixPath(*parts)


def _check_sizes(infos: list[zipfile.ZipInfo], archive: str, limits: ZipLimits) -> None:
    if len(infos) > limits.max_entries:
        raise _bomb(archive, f"{len(infos)} entries, more than {limits.max_entries}")
    total = compressed = 0
    for info in infos:
        if info.file_size > limits.max_entry_bytes:
            raise _bomb(archive, f"{info.filename!r} unpacks to {info.file_size} bytes")
        if (
            info.file_size > limits.ratio_floor_bytes
            and info.file_size > limits.max_ratio * max(info.compress_size, 1)
        ):
            raise _bomb(archive, f"{info.filename!r} is compressed more than "
                                 f"{limits.max_ratio} to 1")
        total += info.file_size
        compressed += info.compress_size
    if total > limits.max_total_bytes:
        raise _bomb(archive, f"unpacks to {total} bytes, more than {limits.max_total_bytes}")
    if total > limits.ratio_floor_bytes and total > limits.max_ratio * max(compressed, 1):
        raise _bomb(archive, f"compressed more than {limits.max_ratio} to 1 overall")


def extract_bundle(archive_path: Path, dest: Path, limits: ZipLimits | None = None) -> Path:
    """Extract into `dest` (an empty folder); returns the path of the manifest there."""
    limits = limits or ZipLimits()
    archive_name = Path(archive_path).name
    if not Path(archive_path).is_file():
        raise BundleError("bad_zip", "no such file", file=archive_name)
    try:
        with open(archive_path, "rb") as raw:
            too_many = zip_directory_check(raw, max_entries=limits.max_entries)
        if too_many:  # refused before zipfile builds an object for every entry
            raise _bomb(archive_name, too_many)
        with zipfile.ZipFile(archive_path) as archive:
            infos = archive.infolist()
            names = [check_entry_name(info) for info in infos]
            seen: set[str] = set()
            for name in names:
                key = str(name).lower()  # two names differing in case clash on some disks
                if key in seen:
                    raise _unsafe(str(name), "a second entry of the same name")
                seen.add(key)
            _check_sizes(infos, archive_name, limits)
            manifests = [n for n, i in zip(names, infos, strict=True)
                         if n.suffix == ".toml" and not i.is_dir()]
            if len(manifests) != 1:
                raise BundleError(
                    "zip_manifest",
                    f"the archive must hold exactly one manifest (*.toml), it holds "
                    f"{len(manifests)}",
                    file=archive_name,
                )
            root = Path(dest).resolve()
            written = 0
            for name, info in zip(names, infos, strict=True):
                target = root.joinpath(*name.parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                written += _extract_one(archive, info, target, limits, written)
    except BundleError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError,
            ValueError, struct.error, zlib.error) as error:
        raise BundleError("bad_zip", f"not a readable zip archive: {error}",
                          file=archive_name) from None
    except OSError as error:  # e.g. a file entry where another entry needs a folder
        raise BundleError("zip_unsafe_entry", f"an entry cannot be written: {error.strerror}",
                          file=archive_name) from None
    except RuntimeError as error:  # zipfile: an encrypted entry without a password
        raise BundleError("bad_zip", f"unreadable entry: {error}", file=archive_name) from None
    return root.joinpath(*manifests[0].parts)


def _extract_one(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, limits: ZipLimits,
    written_before: int,
) -> int:
    written = 0
    with archive.open(info) as source, open(target, "xb") as out:
        head = source.read(4096)
        refuse_pickle(info.filename, head, file=info.filename, field="")
        chunk = head
        while chunk:
            written += len(chunk)
            total = written_before + written
            if written > limits.max_entry_bytes or total > limits.max_total_bytes:
                raise _bomb(info.filename, "more bytes than declared or allowed")
            out.write(chunk)
            chunk = source.read(_CHUNK)
    return written
