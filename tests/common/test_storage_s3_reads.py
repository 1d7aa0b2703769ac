"""Reading a stored file that is opened, not copied, from S3 (leaderboard/common/object_storage.py):
a small file whole in one GET, a file of up to 8 MB in two, a larger one by ranged GETs of the
rows read, never whole; against moto's S3 server on loopback (tests/s3_server.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.files.base import ContentFile

from leaderboard.common.object_storage import BLOCK, S3Storage
from leaderboard.review.rescoring.topk_index import _index_rows
from tests import s3_server
from workers.scoring.compact import npz_member_rows


def _npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def _stored(storage: S3Storage, name: str, content: bytes) -> str:
    return storage.save(name, ContentFile(content))


def test_it_reads_a_small_file_whole_with_one_get(
    bucket_storage: S3Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    topk = np.random.default_rng(1).integers(0, 10, size=(10_000, 1), dtype=np.int16)
    content = _npz(topk=topk)
    assert len(content) < BLOCK
    name = _stored(bucket_storage, "compact/small.npz", content)
    sent = s3_server.requests_recorded(monkeypatch, bucket_storage.bucket_name)

    with bucket_storage.open(name, "rb") as handle, np.load(handle) as arrays:
        assert np.array_equal(arrays["topk"], topk)

    assert sent == [("GET", name, f"bytes=0-{BLOCK - 1}")]


def test_it_reads_a_file_under_8_mb_whole_with_two_gets(
    bucket_storage: S3Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = np.random.default_rng(2).bytes(300_000)
    name = _stored(bucket_storage, "compact/middle.bin", content)
    sent = s3_server.requests_recorded(monkeypatch, bucket_storage.bucket_name)

    with bucket_storage.open(name, "rb") as handle:
        handle.seek(-10, io.SEEK_END)  # read from memory once open: no request more
        assert handle.read() == content[-10:]
        handle.seek(0)
        assert handle.read() == content

    assert sent == [("GET", name, f"bytes=0-{BLOCK - 1}"),
                    ("GET", name, f"bytes={BLOCK}-{300_000 - 1}")]


def test_it_reads_rows_of_a_large_file_by_ranged_gets_of_the_rows_only(
    bucket_storage: S3Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A top-k index segment's shape (examples, 256 members, k=5): 10.2 MB; rows 10 and 11 lie
    in the first 64 KB the open fetched, row 25 crosses its end (read on from there: the next
    128 KB are fetched, holding row 26 too), rows 500 and 3000 take 64 KB each."""
    block = np.random.default_rng(3).integers(-1, 1000, size=(4_000, 256, 5), dtype=np.int16)
    content = _npz(topk=block)
    name = _stored(bucket_storage, "topk-index/large.npz", content)
    data_start = content.index(block.tobytes()[:4096])  # where the array's bytes begin
    row_bytes = 256 * 5 * 2
    rows = np.array([10, 11, 25, 26, 500, 3000])
    assert data_start + 25 * row_bytes < BLOCK < data_start + 26 * row_bytes
    sent = s3_server.requests_recorded(monkeypatch, bucket_storage.bucket_name)

    with bucket_storage.open(name, "rb") as handle:
        got = npz_member_rows(handle, "topk", rows)

    assert np.array_equal(got, block[rows])
    far = [data_start + row * row_bytes for row in (500, 3000)]
    assert sent == [("GET", name, f"bytes=0-{BLOCK - 1}"),
                    ("GET", name, f"bytes={BLOCK}-{3 * BLOCK - 1}"),
                    *[("GET", name, f"bytes={start}-{start + BLOCK - 1}") for start in far]]


def test_it_reads_a_large_file_from_start_to_end_with_growing_gets(
    bucket_storage: S3Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole read asks 8 KB at a time (NumPy's reader 256 KB): the GETs double from 128 KB
    instead, each byte fetched once."""
    scores = np.random.default_rng(4).random((20_000, 128), dtype=np.float32)
    content = _npz(scores=scores)  # 10.2 MB
    name = _stored(bucket_storage, "compact/large.npz", content)
    sent = s3_server.requests_recorded(monkeypatch, bucket_storage.bucket_name)

    with bucket_storage.open(name, "rb") as handle:
        whole = handle.read()

    assert whole == content
    # 64 KB at the open, then 128 KB, 256 KB, ... 4 MB from where the last ended, then the rest
    starts = [0, *np.cumsum([BLOCK << i for i in range(7)]).tolist()]
    ends = [*(start - 1 for start in starts[1:]), len(content) - 1]
    assert sent == [("GET", name, f"bytes={start}-{end}")
                    for start, end in zip(starts, ends, strict=True)]


def test_it_opens_an_empty_file_and_tells_a_missing_one(
    bucket_storage: S3Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _stored(bucket_storage, "compact/empty.bin", b"")
    sent = s3_server.requests_recorded(monkeypatch, bucket_storage.bucket_name)

    with bucket_storage.open(name, "rb") as handle:
        assert handle.read() == b""
    with pytest.raises(FileNotFoundError):
        bucket_storage.open("compact/missing.npz", "rb")
    # a top-k index segment that is not built (yet) is asked by opening it, no HEAD first
    assert _index_rows(bucket_storage, "topk-index/missing.npz", np.array([0])) is None

    assert [(method, key) for method, key, _ in sent] == [
        ("GET", name), ("GET", "compact/missing.npz"), ("GET", "topk-index/missing.npz")]
