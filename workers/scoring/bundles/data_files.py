"""Reading the files a bundle names, safely: inside the root, never a pickle, checked layout.

Every path goes through `resolve` (relative, and still inside the root once links are
followed). A pickle is refused wherever it turns up: by name (.pkl, .pickle), by its magic
bytes (protocol 2 and later start with 0x80 and the protocol number), and inside .npy/.npz
files by an object dtype, which NumPy can only store pickled (AudioSet's label file of the
label-error study is such an array). NumPy is always asked with allow_pickle=False as well.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

from .bounded import LimitExceeded, bounded_check
from .errors import BundleError
from .fields import check_relative_path

PICKLE_SUFFIXES = (".pkl", ".pickle", ".pck")
NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
MAX_DATA_FILE_BYTES = 1 << 30
MAX_NPZ_MEMBER_BYTES = 1 << 28
MAX_NPZ_MEMBERS = 64  # ReaL's real_scores.npz has two
# zipfile builds an object of about 500 bytes per entry of a central directory as it opens an
# archive, and reads as many entries as the directory's bytes hold (46 bytes and the name
# each), whatever the count it declares: both are checked first (`zip_directory_check`).
DIRECTORY_BYTES_PER_ENTRY = 512
# JSON's objects take up to 26 times the file's size (`[[],[],...]`: 64 bytes of list and
# pointer per 3 bytes): a file up to JSON_DIRECT_BYTES is read at once (at most about 430 MB);
# a larger one is first read in a child process that may use JSON_MEMORY_BYTES
# (bounded.py), and read here only once that child has finished.
JSON_DIRECT_BYTES = 16 << 20
JSON_MEMORY_BYTES = 2 << 30
JSON_CPU_SECONDS = 300
PICKLE_MESSAGE = (
    "pickles are never loaded (they can run code); store labels as an integer .npy array "
    "or as JSON"
)


def looks_like_pickle(head: bytes) -> bool:
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def npy_has_objects(head: bytes) -> bool | None:
    """Whether a .npy header declares a dtype holding Python objects; None if not a header."""
    if not head.startswith(NPY_MAGIC):
        return None
    stream = io.BytesIO(head)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            _, _, dtype = np.lib.format.read_array_header_1_0(stream)
        else:
            _, _, dtype = np.lib.format.read_array_header_2_0(stream)
    except (ValueError, SyntaxError, TypeError, EOFError):
        return None  # not a readable header: np.load refuses it later as bad_file
    return bool(dtype.hasobject)


def refuse_pickle(name: str, head: bytes, *, file: str, field: str) -> None:
    if name.lower().endswith(PICKLE_SUFFIXES) or looks_like_pickle(head):
        raise BundleError("pickle", f"a pickle: {PICKLE_MESSAGE}", file=file, field=field)
    if npy_has_objects(head):
        raise BundleError(
            "pickle",
            f"a .npy array of Python objects (dtype=object), stored as pickles: {PICKLE_MESSAGE}",
            file=file,
            field=field,
        )


def resolve(root: Path, relative: str, *, field: str) -> Path:
    """The file `relative` names under `root`; refused if it leads out of it or is absent."""
    check_relative_path(relative, file=relative, field=field)
    try:
        root_real = Path(root).resolve()
        path = (root_real / relative).resolve()
        escapes = not path.is_relative_to(root_real)
        present = not escapes and path.is_file()
    except OSError as error:  # a name too long, a loop of links
        raise BundleError("missing_file", f"cannot be read: {error.strerror}", file=relative,
                          field=field) from None
    if escapes:
        raise BundleError(
            "path_escapes", "a link leads out of the bundle's folder", file=relative, field=field
        )
    if not present:
        raise BundleError("missing_file", f"no such file under {root}", file=relative, field=field)
    return path


def _open_checked(root: Path, relative: str, *, field: str) -> tuple[Path, bytes]:
    path = resolve(root, relative, field=field)
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as error:
        raise BundleError("missing_file", f"cannot be read: {error.strerror}", file=relative,
                          field=field) from None
    if size > MAX_DATA_FILE_BYTES:
        raise BundleError("bad_file", f"larger than {MAX_DATA_FILE_BYTES} bytes", file=relative,
                          field=field)
    refuse_pickle(relative, head, file=relative, field=field)
    return path, head


def zip_directory_check(handle: IO[bytes], *, max_entries: int) -> str | None:
    """Why zipfile should not open this archive (too many entries declared, or a central
    directory larger than `max_entries` entries need), before it reads the directory; None
    when it may. The end record is found as zipfile finds it (its own reader)."""
    end_record = getattr(zipfile, "_EndRecData")(handle)  # noqa: B009 - not in the stubs
    if end_record is None:
        return None  # not a zip archive: zipfile says so
    entries = end_record[getattr(zipfile, "_ECD_ENTRIES_TOTAL")]  # noqa: B009
    size = end_record[getattr(zipfile, "_ECD_SIZE")]  # noqa: B009
    if entries > max_entries:
        return f"{entries} entries, more than {max_entries}"
    if size > max_entries * DIRECTORY_BYTES_PER_ENTRY:
        return (f"a directory of {size} bytes, more than {max_entries} entries need "
                f"({max_entries * DIRECTORY_BYTES_PER_ENTRY})")
    return None


def _json_load(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_json(root: Path, relative: str, *, field: str) -> Any:
    path, _ = _open_checked(root, relative, field=field)
    try:
        if path.stat().st_size > JSON_DIRECT_BYTES:
            bounded_check(lambda: _json_load(path), memory_bytes=JSON_MEMORY_BYTES,
                          cpu_seconds=JSON_CPU_SECONDS,
                          expected=(UnicodeDecodeError, ValueError, RecursionError, OSError))
        return _json_load(path)
    except LimitExceeded as error:
        memory = f"{JSON_MEMORY_BYTES >> 20:,} MiB of memory"
        cpu = f"{JSON_CPU_SECONDS} s of CPU"
        message = (f"reading it as JSON needs more than the "
                   f"{memory if error.reason == 'memory' else cpu} a data file's parse may use"
                   if error.reason in ("memory", "cpu") else
                   f"reading it as JSON {error} (a data file's parse may use {memory} and {cpu})")
        raise BundleError("bad_file", message, file=relative, field=field) from None
    except OSError as error:
        raise BundleError("missing_file", f"cannot be read: {error.strerror}", file=relative,
                          field=field) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        # ValueError: a JSON syntax error, or an integer past Python's 4,300-digit limit
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        raise BundleError("bad_file", f"not JSON: {reason}", file=relative, field=field) from None


def _read_npy_stream(stream: IO[bytes], available: int, *, file: str, field: str) -> np.ndarray:
    """An array from a .npy stream whose header is checked first: no objects, and no more
    data declared than the `available` bytes (a forged shape must not allocate gigabytes)."""
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy version {version}")
        if dtype.hasobject:
            raise BundleError("pickle", "a .npy array of Python objects (dtype=object), stored "
                              f"as pickles: {PICKLE_MESSAGE}", file=file, field=field)
        declared = math.prod(shape) * dtype.itemsize
        left = available - stream.tell()
        if declared > left:
            raise ValueError(f"its header declares {declared} bytes of data, it holds {left}")
        stream.seek(0)  # read_array reads the header again
        array = np.lib.format.read_array(stream, allow_pickle=False)
    except BundleError:
        raise
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, zlib.error,
            zipfile.BadZipFile) as error:
        raise BundleError("bad_file", f"unreadable .npy: {error}", file=file,
                          field=field) from None
    return np.asarray(array)


def read_npy(root: Path, relative: str, *, field: str) -> np.ndarray:
    path, head = _open_checked(root, relative, field=field)
    if not head.startswith(NPY_MAGIC):
        raise BundleError("bad_file", "not a .npy file", file=relative, field=field)
    with open(path, "rb") as handle:
        return _read_npy_stream(handle, path.stat().st_size, file=relative, field=field)


def read_npz_member(root: Path, relative: str, member: str, *, field: str) -> np.ndarray:
    """One array of an .npz archive; every member is checked for pickles and sizes first."""
    path, head = _open_checked(root, relative, field=field)
    if not head.startswith(ZIP_MAGIC):
        raise BundleError("bad_file", "not a .npz file", file=relative, field=field)
    try:
        with open(path, "rb") as raw:
            too_many = zip_directory_check(raw, max_entries=MAX_NPZ_MEMBERS)
        if too_many:
            raise BundleError("bad_file", f"an .npz of {too_many}: at most {MAX_NPZ_MEMBERS} "
                              "arrays", file=relative, field=field)
        with zipfile.ZipFile(path) as archive:
            infos = {info.filename: info for info in archive.infolist()}
            for info in infos.values():
                if info.file_size > MAX_NPZ_MEMBER_BYTES or (
                    info.file_size > 1 << 20 and info.file_size > 200 * max(info.compress_size, 1)
                ):
                    raise BundleError("bad_file", f"the member {info.filename!r} unpacks to "
                                      f"{info.file_size} bytes", file=relative, field=field)
                with archive.open(info) as handle:
                    refuse_pickle(info.filename, handle.read(4096), file=relative, field=field)
            wanted = infos.get(f"{member}.npy")
            if wanted is None:
                raise BundleError("bad_file", f"has no array {member!r}", file=relative,
                                  field=field)
            with archive.open(wanted) as handle:
                return _read_npy_stream(handle, wanted.file_size, file=relative, field=field)
    except BundleError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile,
            NotImplementedError, RuntimeError, zlib.error) as error:
        raise BundleError("bad_file", f"unreadable .npz: {error}", file=relative,
                          field=field) from None


def label_dtype(num_classes: int) -> type:
    """int16 (what the compiled sets of the built-in benchmarks hold) while it fits."""
    return np.int16 if num_classes <= np.iinfo(np.int16).max + 1 else np.int32


def check_labels(
    array: np.ndarray, *, size: int, num_classes: int, file: str, field: str
) -> np.ndarray:
    """A 1-D integer label per example, each in 0..num_classes-1."""
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise BundleError(
            "bad_file",
            f"expected a 1-D integer array, got {array.dtype} {array.shape}",
            file=file,
            field=field,
        )
    if array.shape[0] != size:
        raise BundleError(
            "length_mismatch",
            f"{array.shape[0]} labels for an example set of {size}",
            file=file,
            field=field,
        )
    if size and (int(array.min()) < 0 or int(array.max()) >= num_classes):
        bad = int(np.flatnonzero((array < 0) | (array >= num_classes))[0])
        raise BundleError(
            "label_out_of_range",
            f"label {int(array[bad])} of example {bad} is outside 0..{num_classes - 1}",
            file=file,
            field=field,
        )
    return array.astype(label_dtype(num_classes))
