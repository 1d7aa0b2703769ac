"""The S3 storage: django-storages' S3Storage, writing through boto3's client.

EVALSERVER_STORAGE_BACKEND=leaderboard.common.object_storage.S3Storage
(docs/operators/many-machines.md, "Files in object storage"). Imported only when that setting names
it: django-storages and boto3 are optional at runtime, and a filesystem deployment never loads
them.

django-storages writes each file through a boto3 resource object (`bucket.Object(name)`),
and boto3 builds a resource's class anew for each one: about 7 ms of CPU per file, more than
the request itself, paid by a worker for each compact array it stores (bench/cluster.py --s3).
The client's `upload_fileobj` is the same transfer (multipart in 8 MB parts past 8 MB, so a
checkpoint streams from the web's temporary upload file) without that object. A file under
that threshold (an upload's predictions, a compact array, a compiled label set: every file of
a submission of predictions) is one PutObject whichever way; the client's `put_object` sends
it without s3transfer's manager, its futures and its thread pool, built for each call: about
1 ms of CPU less per file (bench/README.md, cluster.py). Neither asks whether the name is taken
first (no HEAD): django-storages overwrites by default (`file_overwrite`), and the names the
project stores are its own, unique (a submission's id in each).

Reads: a whole file read once is `stored_copy`'s (leaderboard/common/storage.py: one streamed
GET). `open` (`_open` below) serves the readers that seek: NumPy's .npz reader, and the row
readers of workers/scoring/compact.py, which read a few rows of a top-k index segment (128 MB
on ImageNet at 10,000 submissions, leaderboard/review/rescoring/topk_index.py) per decision.
django-storages' own file asks the size (a HEAD), then downloads the whole object at the first
read. This one's first GET asks for the first 64 KB, which is the whole of a small file (a
CIFAR-10 compact array: one request instead of two) and says the size of a larger one; a file
of up to 8 MB is then fetched whole by one more GET, a larger one read by ranged GETs of what
is read, at least 64 KB each (a seek into the block already read costs no request): a top-k
row is read with one GET of 64 KB, not 128 MB; read from start to end, the GETs grow.
"""

from __future__ import annotations

import io
import os
from functools import cached_property
from typing import Any

from botocore.exceptions import ClientError
from botocore.handlers import add_expect_header
from django.core.files.base import File
from storages.backends.s3 import S3Storage as _DjangoStoragesS3
from storages.utils import ReadBytesWrapper, clean_name, is_seekable

WHOLE_BELOW = 8 << 20  # a file opened to read up to this size is fetched whole, at once
BLOCK = 64 << 10  # the first GET of an open file asks this much; a larger file's reads, at least
MAX_AHEAD = 16 << 20  # the most a larger file's read from start to end fetches at once


def _expect_continue_but_for_put_object(model: Any, params: dict[str, Any], **kwargs: Any) -> None:
    if model.name != "PutObject":
        add_expect_header(model, params, **kwargs)


def _answer_bytes(answer: dict[str, Any]) -> bytes:
    body = answer["Body"]
    try:
        return bytes(body.read())
    finally:
        body.close()


def _total_size(answer: dict[str, Any], got: int) -> int:
    """The object's size from a ranged GET's answer: "bytes 0-65535/1234567" (a store that
    ignored the range sent it whole: what it sent)."""
    content_range = answer.get("ContentRange") or ""
    return int(content_range.rsplit("/", 1)[1]) if "/" in content_range else got


class RangedObject(io.RawIOBase):
    """A stored object's bytes read by ranged GETs (the io.BufferedReader around it asks at
    least a block), the last fetch kept: at first, the block the open fetched. A read that goes
    on where the last one ended fetches ahead, twice as much as the fetch before, up to 16 MB:
    a file read from start to end (NumPy's reader asks 256 KB at a time) costs a few GETs, not
    one per read."""

    def __init__(self, client: Any, bucket: str, key: str, size: int, first: bytes) -> None:
        self._client, self._bucket, self._key = client, bucket, key
        self.size, self._position = size, 0
        self._ahead_start, self._ahead = 0, first  # the last fetch
        self._fetch = BLOCK  # the size of the last fetch
        self._last_end = -1  # where the last read ended

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._position = base + offset
        return self._position

    def readinto(self, buffer: Any) -> int:
        start = self._position
        wanted = min(len(buffer), self.size - start)
        if wanted <= 0:
            return 0
        if self._ahead_start <= start < self._ahead_start + len(self._ahead):
            offset = start - self._ahead_start
            data = self._ahead[offset:offset + wanted]
        else:
            self._fetch = min(2 * self._fetch, MAX_AHEAD) if start == self._last_end else BLOCK
            last = min(start + max(wanted, self._fetch), self.size) - 1
            self._ahead_start, self._ahead = start, _answer_bytes(self._client.get_object(
                Bucket=self._bucket, Key=self._key, Range=f"bytes={start}-{last}"))
            if not self._ahead:
                raise OSError(f"{self._key}: the store sent nothing at byte {start} of "
                              f"{self.size}")
            data = self._ahead[:wanted]
        with memoryview(buffer) as view:
            view[:len(data)] = data
        self._position = self._last_end = start + len(data)
        return len(data)


class S3Storage(_DjangoStoragesS3):
    @cached_property
    def client(self) -> Any:
        """One S3 client for every thread of the process (boto3's clients are thread-safe,
        its resources are not: django-storages makes a resource, with a session, per thread,
        about 0.1 s of CPU each; `storage_each` stores and reads from a few threads).

        Its PutObject requests go without `Expect: 100-continue`, which botocore adds to every
        PUT with a body: the client sends the headers, waits for the store's "100 Continue",
        then sends the body, one round trip more per file. That wait saves sending a body the
        store would refuse; a PutObject here is a file under the multipart threshold, already
        in memory, and a round trip to a store across a network costs more than sending it. A
        part of a multipart upload (8 MB) still asks first."""
        client = self.connection.meta.client
        events = client.meta.events  # this client's own copy of the session's handlers
        events.unregister("before-call.s3", add_expect_header)
        events.register("before-call.s3", _expect_continue_but_for_put_object)
        return client

    def _open(self, name: str, mode: str = "rb") -> Any:
        """A file to read, as the module's docstring says; django-storages' own for any other
        mode."""
        if mode not in ("r", "rb"):
            return super()._open(name, mode)
        key = self._normalize_name(clean_name(name))
        try:
            answer = self.client.get_object(Bucket=self.bucket_name, Key=key,
                                            Range=f"bytes=0-{BLOCK - 1}")
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status == 404:
                raise FileNotFoundError(f"File does not exist: {key}") from exc
            if status == 416:  # no byte 0: an empty object
                return File(io.BytesIO(b""), name=name)
            raise
        first = _answer_bytes(answer)
        size = _total_size(answer, len(first))
        if size <= WHOLE_BELOW:
            rest = b"" if size <= len(first) else _answer_bytes(self.client.get_object(
                Bucket=self.bucket_name, Key=key, Range=f"bytes={len(first)}-{size - 1}"))
            return File(io.BytesIO(first + rest), name=name)
        raw = RangedObject(self.client, self.bucket_name, key, size, first)
        return File(io.BufferedReader(raw, buffer_size=BLOCK), name=name)

    def _save(self, name: str, content: Any) -> str:
        """As django-storages' own (its parameters, content type and gzip), but through the
        client."""
        cleaned = clean_name(name)
        key = self._normalize_name(cleaned)
        params = self._get_write_parameters(key, content)
        size = getattr(content, "size", None)  # Django's File and its subclasses know it
        if is_seekable(content):
            content.seek(0, os.SEEK_SET)
        content = ReadBytesWrapper(content)
        if (self.gzip and params["ContentType"] in self.gzip_content_types
                and "ContentEncoding" not in params):
            content = self._compress_content(content)
            params["ContentEncoding"] = "gzip"
            size = None  # the compressed size: not known before reading
        client = self.client
        if size is not None and size < self.transfer_config.multipart_threshold:
            client.put_object(Bucket=self.bucket_name, Key=key, Body=content.read(), **params)
            return str(cleaned)
        # s3transfer closes what it uploaded; the caller still owns it (django-storages does
        # the same: https://github.com/boto/s3transfer/issues/80)
        close = content.close
        content.close = lambda: None
        try:
            client.upload_fileobj(
                content, self.bucket_name, key, ExtraArgs=params, Config=self.transfer_config)
        finally:
            content.close = close
        return str(cleaned)
