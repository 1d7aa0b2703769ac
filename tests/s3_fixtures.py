"""Fixtures of the S3 storage tests (tests/test_storage_s3*.py): moto's S3 server on loopback,
one per test module, and the project's S3 storage on a fresh bucket in it (tests/s3_server.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests import s3_server

if TYPE_CHECKING:  # boto3 and django-storages are optional at runtime; imported when used
    from leaderboard.common.object_storage import S3Storage


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with s3_server.running_on_loopback() as endpoint:
        yield endpoint


@pytest.fixture
def bucket_storage(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3Storage:
    """The project's S3 storage on a fresh bucket."""
    from leaderboard.common.object_storage import S3Storage

    for name, value in s3_server.CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    bucket = f"test-{uuid.uuid4().hex[:12]}"
    s3_server.bucket_create(s3_endpoint, bucket)
    return S3Storage(**s3_server.storage_options(s3_endpoint, bucket))
