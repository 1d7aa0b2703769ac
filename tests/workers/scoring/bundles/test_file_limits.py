"""The limits of what a bundle's files may ask of the server's memory (security issue 37,
item 3, "every other resource"): a zip archive's central directory (the bundle, and an .npz
it carries) is measured before zipfile builds an object per entry, and a large JSON file is
first read in a child process under a memory limit (docs/bundles.md §1 and §7)."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from tests.workers.scoring.bundles.bundle_files import data_files, manifest, write_bundle
from workers.scoring.bundles import BundleError, compile_bundle, extract_bundle, read_bundle
from workers.scoring.bundles import data_files as files_module

NOWHERE = Path("/nonexistent-data-dir")


def central_directory_only(entries: int, declared: int) -> bytes:
    """A zip archive of `entries` central-directory records (46 bytes and a short name each)
    and no file data, whose end record declares `declared` entries: zipfile reads as many
    records as the directory's bytes hold (about 440 bytes of memory each)."""
    directory = bytearray()
    for i in range(entries):
        name = str(i).encode()
        directory += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0,
                                 len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, declared, declared, len(directory), 0,
                      0)
    return bytes(directory) + end


@pytest.mark.parametrize(("declared", "why"), [
    (65_535, "65535 entries, more than 10000"),
    (1, "a directory of {size} bytes, more than 10000 entries need (5120000)"),
], ids=["declared", "hidden-behind-a-count-of-one"])
def test_it_refuses_a_zip_of_too_many_entries_before_reading_its_directory(
    tmp_path: Path, declared: int, why: str,
) -> None:
    # 110,000 entries in 5.6 MB: zipfile alone takes about 48 MB and seconds to list them (a
    # 512 MiB upload holds about 10 million, 4.4 GB); the end record's count can be a lie,
    # the directory's size cannot
    content = central_directory_only(110_000, declared)
    archive = tmp_path / "many.zip"
    archive.write_bytes(content)
    tracemalloc.start()
    try:
        with pytest.raises(BundleError) as caught:
            extract_bundle(archive, tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = f"refused as a possible zip bomb: {why.format(size=len(content) - 22)}"
    assert (caught.value.code, caught.value.file, caught.value.message) == (
        "zip_bomb", "many.zip", message)
    assert peak < 1 << 20  # no entry was listed
    assert not (tmp_path / "out").exists()


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def test_it_refuses_an_npz_of_more_arrays_than_the_limit(tmp_path: Path) -> None:
    judged = np.array([["toy_001.png", "0"], ["toy_001.png", "1"], ["toy_002.png", "2"]])
    extra = {f"a{i}": np.zeros(1) for i in range(64)}
    path = write_bundle(tmp_path, manifest(),
                        data_files() | {"judged.npz": _npz({"info": judged} | extra)})
    with pytest.raises(BundleError) as caught:
        compile_bundle(read_bundle(path), data_dir=NOWHERE)
    error = caught.value
    assert (error.code, error.file, error.field, error.message) == (
        "bad_file", "judged.npz", "label_sets.real.judged",
        "an .npz of 65 entries, more than 64: at most 64 arrays")
    # 64 arrays are read
    path = write_bundle(tmp_path / "ok", manifest(), data_files() | {
        "judged.npz": _npz({"info": judged} | {f"a{i}": np.zeros(1) for i in range(63)})})
    assert compile_bundle(read_bundle(path), data_dir=NOWHERE)["real"].size == 6


# In a fresh interpreter, as a worker's first bundle: the child may use its budget of address
# space beyond its parent's, which includes the parent's free heap (a long test session's can
# hold more than this file needs). The limits: 16 MiB for files above 1 KiB (the defaults: 2 GiB
# above 16 MiB).
COMPILE = """
import json, sys
from pathlib import Path
from workers.scoring.bundles import BundleError, compile_bundle, data_files, read_bundle
data_files.JSON_DIRECT_BYTES, data_files.JSON_MEMORY_BYTES = 1 << 10, 16 << 20
try:
    compile_bundle(read_bundle(Path(sys.argv[1])), data_dir=Path("/nonexistent-data-dir"))
except BundleError as error:
    print(json.dumps([error.code, error.file, error.field, error.message]))
"""


def test_it_refuses_a_json_file_whose_parse_needs_more_memory_than_its_limit(
    tmp_path: Path,
) -> None:
    # `[[],[],...]` takes 26 times its size in memory: 2 MB of it, about 55 MB
    lists = b"[" + b"[]," * 700_000 + b"[]]"
    path = write_bundle(tmp_path, manifest(), data_files() | {"real.json": lists})
    done = subprocess.run([sys.executable, "-c", COMPILE, str(path)], cwd=PROJECT_ROOT,
                          capture_output=True, check=True)
    assert json.loads(done.stdout) == [
        "bad_file", "real.json", "label_sets.real.accepted",
        "reading it as JSON needs more than the 16 MiB of memory a data file's parse may use"]


def test_it_reads_a_json_file_above_the_direct_size_once_its_child_has_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(files_module, "JSON_DIRECT_BYTES", 0)  # every file through a child
    compiled = compile_bundle(read_bundle(write_bundle(tmp_path)), data_dir=NOWHERE)
    assert compiled["real"].arrays["mask"].tolist() == [True, True, False, True, True, True]
    # and a file that is not JSON is still named as such
    path = write_bundle(tmp_path / "bad", manifest(), data_files() | {"real.json": b"[1,"})
    with pytest.raises(BundleError) as caught:
        compile_bundle(read_bundle(path), data_dir=NOWHERE)
    assert (caught.value.code, caught.value.message) == (
        "bad_file", f"not JSON: {_json_error(b'[1,')}")


def _json_error(raw: bytes) -> str:
    try:
        json.loads(raw)
    except ValueError as error:
        return str(error)
    raise AssertionError("valid JSON")
