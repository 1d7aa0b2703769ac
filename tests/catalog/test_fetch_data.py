"""`manage.py fetch_data` against a real HTTP server on 127.0.0.1 serving copies of the real
data files (and a corrupted copy): never the internet."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.catalog.data_server import DataServer, data_server
from tests.helpers import PROJECT_ROOT, free_port
from workers.scoring.bundles import builtin_bundle, builtin_slugs, label_set_files

MANIFEST = PROJECT_ROOT / "data-sources.toml"
MNIST = ("mnist/cleanlab_cv_probabilities.npy", "mnist/cleanlab_mturk.json",
         "mnist/original_labels.npy", "mnist/t10k-images-idx3-ubyte.gz",
         "mnist/t10k-labels-idx1-ubyte.gz")
IMAGES = "mnist/t10k-images-idx3-ubyte.gz"  # 1,648,877 bytes


@pytest.fixture
def mirror(tmp_path: Path, data_dir: Path) -> Path:
    """A copy of the real MNIST files, laid out like the data directory."""
    root = tmp_path / "mirror"
    for relative in MNIST:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / relative, root / relative)
    return root


@pytest.fixture
def server(mirror: Path) -> Iterator[DataServer]:
    with data_server(mirror) as served:
        yield served


def fetch(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("fetch_data", "--no-progress", "-v", "2", *args, stdout=out, stderr=err)
    except CommandError as exc:
        raise CommandError(f"{exc}\n{err.getvalue()}") from exc
    return out.getvalue(), err.getvalue()


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_it_fetches_a_benchmarks_files_from_a_mirror_byte_for_byte(
        server: DataServer, data_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "data"

    out, _ = fetch("--dest", str(dest), "--base-url", server.url + "/", "--only", "mnist")

    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")
                  if p.is_file()) == sorted(MNIST)
    for relative in MNIST:
        assert (dest / relative).read_bytes() == (data_dir / relative).read_bytes()
        assert f"fetched {relative} " in out
    assert sorted(s.path for s in server.log) == sorted(MNIST)
    assert {(s.status, s.range) for s in server.log} == {(200, None)}
    assert "5 data files present" in out and "(5 fetched, 0 already there)" in out


def test_it_skips_files_already_present_with_the_right_checksum(
        server: DataServer, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    fetch("--dest", str(dest), "--base-url", server.url, "--only", "mnist")
    server.log.clear()

    out, _ = fetch("--dest", str(dest), "--base-url", server.url, "--only", "mnist")

    assert server.log == []
    assert "(0 fetched, 5 already there)" in out


def test_it_replaces_a_file_that_differs_from_the_manifest(
        server: DataServer, data_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    fetch("--dest", str(dest), "--base-url", server.url, "--only", "mnist")
    (dest / "mnist/cleanlab_mturk.json").write_text("[]")
    server.log.clear()

    out, _ = fetch("--dest", str(dest), "--base-url", server.url, "--only", "mnist")

    assert [s.path for s in server.log] == ["mnist/cleanlab_mturk.json"]
    assert "mnist/cleanlab_mturk.json: differs from the manifest; fetching it again" in out
    assert ((dest / "mnist/cleanlab_mturk.json").read_bytes()
            == (data_dir / "mnist/cleanlab_mturk.json").read_bytes())


@pytest.mark.slow
def test_it_deletes_a_corrupted_download_names_both_checksums_and_exits_non_zero(
        mirror: Path, data_dir: Path, tmp_path: Path) -> None:
    corrupted = mirror / "mnist/original_labels.npy"
    data = bytearray(corrupted.read_bytes())
    data[-1] ^= 0xFF  # the last label, one byte
    corrupted.write_bytes(bytes(data))
    expected = sha256_of((data_dir / "mnist/original_labels.npy").read_bytes())
    dest = tmp_path / "data"

    with data_server(mirror) as served:
        done = subprocess.run(
            [sys.executable, "manage.py", "fetch_data", "--dest", str(dest),
             "--base-url", served.url, "--only", "mnist"],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "evalserver.settings_testing"})

    assert done.returncode == 1
    assert (f"mnist/original_labels.npy: checksum mismatch (from {served.url}/mnist/"
            f"original_labels.npy): expected sha256 {expected} (20,128 bytes), got sha256 "
            f"{sha256_of(bytes(data))} (20,128 bytes); the download was deleted") in done.stderr
    assert "1 of 5 file(s) not fetched: mnist/original_labels.npy" in done.stderr
    assert not (dest / "mnist/original_labels.npy").exists()
    assert not (dest / "mnist/original_labels.npy.part").exists()
    # the other files were fetched and kept
    assert sorted(p.name for p in (dest / "mnist").iterdir()) == sorted(
        Path(r).name for r in MNIST if r != "mnist/original_labels.npy")


def test_it_resumes_an_interrupted_download_with_a_range_request(
        server: DataServer, data_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    original = (data_dir / IMAGES).read_bytes()
    server.cut_after[IMAGES] = 600_000

    with pytest.raises(CommandError) as failed:
        fetch("--dest", str(dest), "--base-url", server.url, "--only", "mnist")

    assert (f"download from {server.url}/{IMAGES} interrupted after 600,000 of 1,648,877 "
            "bytes (the connection closed); run again to resume") in str(failed.value)
    assert not (dest / IMAGES).exists()
    part = dest / (IMAGES + ".part")
    assert part.read_bytes() == original[:600_000]

    server.cut_after.clear()
    server.log.clear()
    fetch("--dest", str(dest), "--base-url", server.url, "--only", "mnist")

    assert [(s.path, s.range, s.status, s.bytes_sent) for s in server.log] == [
        (IMAGES, "bytes=600000-", 206, len(original) - 600_000)]
    assert (dest / IMAGES).read_bytes() == original
    assert not part.exists()


def test_it_starts_over_when_the_server_ignores_the_range(
        server: DataServer, data_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    original = (data_dir / IMAGES).read_bytes()
    (dest / "mnist").mkdir(parents=True)
    (dest / (IMAGES + ".part")).write_bytes(b"\0" * 1000)  # not even the right prefix
    server.ranges = False

    fetch("--dest", str(dest), "--base-url", server.url, "--only", "mnist")

    served = next(s for s in server.log if s.path == IMAGES)
    assert (served.range, served.status, served.bytes_sent) == ("bytes=1000-", 200,
                                                                len(original))
    assert (dest / IMAGES).read_bytes() == original


def test_it_tries_the_next_source_when_one_does_not_answer(
        server: DataServer, data_dir: Path, tmp_path: Path) -> None:
    original = (data_dir / "mnist/t10k-labels-idx1-ubyte.gz").read_bytes()
    manifest = tmp_path / "sources.toml"
    manifest.write_text(
        "[[file]]\n"
        'path = "mnist/t10k-labels-idx1-ubyte.gz"\n'
        f'url = "http://127.0.0.1:{free_port()}/nothing-listens-here.gz"\n'
        f'mirrors = ["{server.url}/missing.gz", "{server.url}/mnist/t10k-labels-idx1-ubyte.gz"]\n'
        f"size = {len(original)}\n"
        f'sha256 = "{sha256_of(original)}"\n'
        'license = "CC-BY-SA-3.0"\n')
    dest = tmp_path / "data"

    out, _ = fetch("--dest", str(dest), "--manifest", str(manifest))

    assert [(s.path, s.status) for s in server.log] == [
        ("missing.gz", 404), ("mnist/t10k-labels-idx1-ubyte.gz", 200)]
    assert f"from {server.url}/mnist/t10k-labels-idx1-ubyte.gz" in out
    assert (dest / "mnist/t10k-labels-idx1-ubyte.gz").read_bytes() == original


def test_it_names_every_source_that_failed(server: DataServer, tmp_path: Path) -> None:
    mirror_without_mnist = tmp_path / "empty"
    mirror_without_mnist.mkdir()
    server.root = mirror_without_mnist

    with pytest.raises(CommandError) as failed:
        fetch("--dest", str(tmp_path / "data"), "--base-url", server.url, "--only", "mnist")

    assert (f"error: mnist/original_labels.npy: {server.url}/mnist/original_labels.npy "
            "answered 404 Not Found") in str(failed.value)
    assert "5 of 5 file(s) not fetched" in str(failed.value)
    assert not (tmp_path / "data/mnist/original_labels.npy").exists()


def test_it_gives_up_on_a_source_that_stalls_and_keeps_the_part(
        server: DataServer, data_dir: Path, tmp_path: Path) -> None:
    labels = "mnist/original_labels.npy"  # 20,128 bytes
    # 1,000 bytes, then one byte every 30 s: a stall timeout of 1 s is hit after exactly those
    # bytes, however slow the machine (the next byte is 29 s beyond the limit)
    server.trickle[labels] = (1000, 30.0)
    dest = tmp_path / "data"
    err = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("fetch_data", "--no-progress", "--dest", str(dest), "--base-url",
                     server.url, "--only", "mnist", "--stall-timeout", "1",
                     stdout=StringIO(), stderr=err)

    assert failed.value.returncode == 1
    assert str(failed.value) == ("1 of 5 file(s) not fetched: mnist/original_labels.npy "
                                 "(see the errors above)")
    assert err.getvalue() == (
        f"error: {labels}: download from {server.url}/{labels} interrupted after 1,000 of "
        "20,128 bytes (stall timeout: nothing received for 1 s); run again to resume\n")
    assert (dest / (labels + ".part")).read_bytes() == (data_dir / labels).read_bytes()[:1000]
    assert sorted(p.name for p in (dest / "mnist").iterdir()) == sorted(
        [Path(r).name for r in MNIST if r != labels] + ["original_labels.npy.part"])


def test_it_gives_up_on_a_source_past_its_deadline_and_tries_the_next(
        server: DataServer, data_dir: Path, tmp_path: Path) -> None:
    labels = "mnist/t10k-labels-idx1-ubyte.gz"
    original = (data_dir / labels).read_bytes()  # 4,542 bytes: 15 min at 5 bytes a second
    manifest = tmp_path / "sources.toml"
    manifest.write_text(
        "[[file]]\n"
        f'path = "{labels}"\n'
        f'url = "{server.url}/{labels}"\n'
        f'mirrors = ["{server.url}/missing.gz"]\n'
        f"size = {len(original)}\n"
        f'sha256 = "{sha256_of(original)}"\n'
        'license = "CC-BY-SA-3.0"\n')
    # a byte every 0.2 s never stalls for 5 s, and never delivers the file within 2 s
    server.trickle[labels] = (0, 0.2)
    dest = tmp_path / "data"
    err = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("fetch_data", "--no-progress", "--dest", str(dest), "--manifest",
                     str(manifest), "--stall-timeout", "5", "--deadline", "2",
                     stdout=StringIO(), stderr=err)

    part = dest / (labels + ".part")
    have = part.stat().st_size  # how many bytes trickled in within the 2 s depends on the machine
    assert 0 < have < 100
    assert part.read_bytes() == original[:have]
    assert failed.value.returncode == 1
    assert str(failed.value) == f"1 of 1 file(s) not fetched: {labels} (see the errors above)"
    assert err.getvalue() == (
        f"error: {labels}: download from {server.url}/{labels} interrupted after {have:,} of "
        "4,542 bytes (deadline: not complete within 2 s); run again to resume; "
        f"{labels}: {server.url}/missing.gz answered 404 Not Found\n")
    # the next source was asked for the rest of the file
    assert [(s.path, s.range, s.status) for s in server.log] == [
        (labels, None, 200), ("missing.gz", f"bytes={have}-", 404)]
    assert [p.name for p in (dest / "mnist").iterdir()] == [part.name]


def test_it_checks_without_downloading(server: DataServer, data_dir: Path,
                                       tmp_path: Path) -> None:
    dest = tmp_path / "data"
    (dest / "mnist").mkdir(parents=True)
    shutil.copyfile(data_dir / "mnist/original_labels.npy", dest / "mnist/original_labels.npy")
    (dest / "mnist/cleanlab_mturk.json").write_text("[]")

    with pytest.raises(CommandError) as failed:
        fetch("--dest", str(dest), "--only", "mnist", "--check")

    assert "4 of 5 data file(s) missing or different" in str(failed.value)
    summary = StringIO()
    with pytest.raises(CommandError):
        call_command("fetch_data", "--dest", str(dest), "--only", "mnist", "--check",
                     stdout=summary)
    assert summary.getvalue() == ("mnist: 4 of 5 files missing or different (first: "
                                  "mnist/cleanlab_cv_probabilities.npy; -v 2 lists them)\n")
    out, _ = fetch("--dest", str(data_dir), "--check")
    assert out.strip() == f"all 128 data files present in {data_dir.resolve()}"
    assert server.log == []


def test_it_refuses_an_unknown_benchmark_by_name(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="unknown benchmark.s. svhn; the manifest has 20news, "
                                           "caltech256, cifar10, cifar100, imagenet, imdb, mnist"):
        fetch("--dest", str(tmp_path), "--only", "mnist", "svhn")


def test_it_reports_sources_that_do_not_answer(tmp_path: Path) -> None:
    port = free_port()
    with pytest.raises(CommandError, match=f"5 of 5 file.s. cannot be fetched now: no answer "
                                           f"from 127.0.0.1:{port}"):
        fetch("--only", "mnist", "--reachable", "--base-url", f"http://127.0.0.1:{port}")


def test_it_finds_the_sources_answering(server: DataServer) -> None:
    fetch("--only", "mnist", "--reachable", "--base-url", server.url)

    assert server.log == []  # a connection only, no request


# -- the manifest itself -------------------------------------------------------------------


def test_the_manifest_describes_the_real_files_byte_for_byte(data_dir: Path) -> None:
    entries = tomllib.loads(MANIFEST.read_text())["file"]
    for entry in entries:
        data = (data_dir / entry["path"]).read_bytes()
        assert (len(data), sha256_of(data)) == (entry["size"], entry["sha256"]), entry["path"]
        assert entry["url"].startswith(("https://", "http://"))
        assert entry["license"] in {"Apache-2.0", "MIT", "CC-BY-NC-SA-4.0", "CC-BY-SA-3.0"}


def test_the_manifest_lists_every_file_the_server_reads(data_dir: Path) -> None:
    listed = {entry["path"] for entry in tomllib.loads(MANIFEST.read_text())["file"]}
    bundles = [builtin_bundle(slug) for slug in builtin_slugs()]
    read = {name for bundle in bundles for ls in bundle.label_sets
            for name in label_set_files(bundle, ls)}
    demo_files = {str(p.relative_to(data_dir)) for p in
                  (data_dir / "cifar10/model_predictions").rglob("*.json")} | {
        "imagenet/cleanlab_cv_predicted_labels.npy", "cifar10/cleanlab_cv_probabilities.npy",
        "mnist/cleanlab_cv_probabilities.npy", IMAGES}
    on_disk = {p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if p.is_file()}

    assert read | demo_files <= listed
    # every file of the data directory but its description
    assert listed == on_disk - {"MANIFEST.md"}
    assert len(listed) == 128
