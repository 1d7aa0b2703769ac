"""Storing a file in S3 (leaderboard/common/object_storage.py): a file under the multipart
threshold is one PutObject that does not wait for the store's "100 Continue"; a larger one goes
in parts, each of which still asks first; against moto's S3 server on loopback
(tests/s3_server.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.files.base import ContentFile

from leaderboard.common.object_storage import S3Storage


@pytest.fixture
def sent_expect(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str | None]]:
    """Every request the storage sends from now on: (method, the query's keys joined, its
    Expect header or None)."""
    from botocore.endpoint import Endpoint

    sent: list[tuple[str, str, str | None]] = []
    send = Endpoint._send

    def recorded(self: Endpoint, request: Any) -> Any:
        expect = request.headers.get("Expect")
        query = ",".join(sorted(parse_qs(urlsplit(request.url).query, keep_blank_values=True)))
        sent.append((request.method, query,
                     expect.decode() if isinstance(expect, bytes) else expect))
        return send(self, request)

    monkeypatch.setattr(Endpoint, "_send", recorded)
    return sent


def test_it_stores_a_small_file_with_one_put_that_does_not_wait_to_continue(
    bucket_storage: S3Storage, sent_expect: list[tuple[str, str, str | None]]
) -> None:
    content = bytes(range(256)) * 300  # 76,800 bytes: a submission's zip of uploads is ~70 kB

    name = bucket_storage.save("uploads/small.zip", ContentFile(content))

    assert sent_expect == [("PUT", "", None)]
    with bucket_storage.open(name, "rb") as handle:
        assert handle.read() == content


def test_it_stores_a_file_past_the_multipart_threshold_in_parts_that_ask_to_continue(
    bucket_storage: S3Storage, sent_expect: list[tuple[str, str, str | None]]
) -> None:
    threshold = bucket_storage.transfer_config.multipart_threshold
    part = bucket_storage.transfer_config.multipart_chunksize
    content = (bytes(range(251)) * (threshold // 251 + 2))[:threshold + part // 2]
    assert threshold == part == 8 << 20  # boto3's defaults: two parts, 8 MB and 4 MB

    name = bucket_storage.save("checkpoints/large.onnx", ContentFile(content))

    assert sent_expect == [("POST", "uploads", None),
                           ("PUT", "partNumber,uploadId", "100-continue"),
                           ("PUT", "partNumber,uploadId", "100-continue"),
                           ("POST", "uploadId", None)]
    with bucket_storage.open(name, "rb") as handle:
        assert handle.read() == content
