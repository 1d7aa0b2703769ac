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
project stores are its own, unique (a submission's id in each). Reads are `stored_copy`'s
(leaderboard/common/storage.py: one streamed GET) or the parent's.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

from storages.backends.s3 import S3Storage as _DjangoStoragesS3
from storages.utils import ReadBytesWrapper, clean_name, is_seekable


class S3Storage(_DjangoStoragesS3):
    @cached_property
    def client(self) -> Any:
        """One S3 client for every thread of the process (boto3's clients are thread-safe,
        its resources are not: django-storages makes a resource, with a session, per thread,
        about 0.1 s of CPU each; `storage_each` stores and reads from a few threads)."""
        return self.connection.meta.client

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
