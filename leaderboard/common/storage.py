"""Stored files, read through Django's storage API only.

Uploads, checkpoints, the compact prediction arrays and the compiled label-set versions live
in the storage that `STORAGES["default"]` names (EVALSERVER_STORAGE_BACKEND in
evalserver/settings/core.py): a folder under MEDIA_ROOT by default, S3 through django-storages by
changing that setting. Nothing else in the project builds a path into the store.

Most readers need only a file object (`storage.open`, `FieldFile.open`; NumPy reads .npz from
one). A library that must have a path on disk (the memory-mapped .npy reader of uploaded
predictions, the sandboxed model runner) gets it from `stored_file_path`: the file itself when
the storage is a local folder, otherwise a temporary copy removed afterwards. A storage says
which by `path()`: Django's contract is that a store without local files raises
NotImplementedError there (S3, and tests/pathless_storage.py).

An object store out of reach (connection refused or cut, a timeout, a 5xx or throttling
answer) is transient, as a local disk's OSError is: `storage_error_transient` says so for any
exception, without importing botocore (a filesystem deployment never loads it). Workers retry
such a job (leaderboard/tasks/cpu.py); the web side answers 503 `storage_unavailable` and records
nothing (leaderboard/common/error_pages.py;
docs/operators/many-machines.md, "Files in object storage").
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar

import numpy as np
from django.core.files.storage import Storage, default_storage
from django.db.models.fields.files import FieldFile

# S3 error codes that mean "not now" rather than "never": worth a retry
_TRANSIENT_S3_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException",
                                 "RequestTimeout", "ServiceUnavailable", "InternalError"})


T = TypeVar("T")
R = TypeVar("R")

# An object store's requests of one job that go at once (a submission has three files)
_CONCURRENT_REQUESTS = 4
_pool: tuple[int, ThreadPoolExecutor] | None = None


class StorageUnavailable(OSError):
    """The storage could not be reached; raised for a transient object-store error so that
    everything treating OSError as transient (Celery's autoretry_for) retries it too."""


def _botocore_transient(exc: BaseException) -> bool:
    exceptions = sys.modules.get("botocore.exceptions")
    if exceptions is None:  # botocore never loaded: no exception can come from it
        return False
    if isinstance(exc, exceptions.ConnectionError | exceptions.HTTPClientError):
        return True  # refused, unreachable, timed out, cut mid-answer
    if isinstance(exc, exceptions.ClientError):
        response = getattr(exc, "response", None) or {}
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return int(status) >= 500 or response.get("Error", {}).get("Code") in _TRANSIENT_S3_CODES
    return False


def storage_error_transient(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from or during, is the storage out of
    reach for now (StorageUnavailable, or an object store's connection failure, timeout, 5xx
    or throttling answer); a local disk's OSError is not looked for here."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, StorageUnavailable) or _botocore_transient(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def _name_and_storage(stored: FieldFile | str, storage: Storage | None) -> tuple[str, Storage]:
    if isinstance(stored, FieldFile):
        if not stored.name:
            raise ValueError(f"{stored.field} holds no file")
        return str(stored.name), stored.storage
    return stored, storage or default_storage


@contextmanager
def stored_file_path(stored: FieldFile | str, *, storage: Storage | None = None
                     ) -> Iterator[Path]:
    """A local path to a stored file (a FileField's file, or a name in `storage`, default
    storage when not given), valid inside the `with` block; do not write to it."""
    name, storage = _name_and_storage(stored, storage)
    try:
        local = storage.path(name)
    except NotImplementedError:
        pass
    else:
        yield Path(local)
        return
    with tempfile.TemporaryDirectory(prefix="evalserver-") as folder:
        # the stored name's extension is kept: some readers choose the format by it
        copy = Path(folder) / PurePosixPath(name).name
        with open(copy, "wb") as target:
            stored_copy(name, storage=storage, target=target)
        yield copy


def object_store(storage: Storage) -> bool:
    """Whether the storage is an S3 bucket (django-storages' S3Storage or this project's)."""
    return bool(getattr(storage, "bucket_name", None)) and hasattr(storage, "_normalize_name")


def _s3_client(storage: Any) -> Any:
    # object_storage.S3Storage's one client for every thread; django-storages' own storage
    # has a connection (a resource: not thread-safe) per thread
    return getattr(storage, "client", None) or storage.connection.meta.client


def _threads() -> ThreadPoolExecutor:
    global _pool
    if _pool is None or _pool[0] != os.getpid():  # a forked pool process makes its own
        _pool = (os.getpid(), ThreadPoolExecutor(_CONCURRENT_REQUESTS, "storage"))
    return _pool[1]


def storage_each(storage: Storage, work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`work(item)` for each item, the results in order; concurrently when the storage is an
    object store, where each file is a network round trip spent mostly waiting: a worker that
    reads three files waits for one round trip instead of three (docs/operators/
    many-machines.md, "Files in object storage"). `work` must not touch the database
    (threads). An exception is raised once every item has been tried."""
    if len(items) <= 1 or not object_store(storage):
        return [work(item) for item in items]
    futures = [_threads().submit(work, item) for item in items]
    # Every one finished before any exception leaves: a caller's temporary folder is removed
    # as the exception passes through it, under a sibling still writing there (seen: the
    # folder's removal failed "Directory not empty", instead of the storage's error).
    wait(futures)
    return [future.result() for future in futures]


@contextmanager
def storage_meanwhile(storage: Storage, work: Callable[[], object]) -> Iterator[None]:
    """`work()` (storing a file: no database, threads) done while the block runs when the
    storage is an object store, whose request is a round trip spent mostly waiting; before
    it otherwise. The block's end waits for it, and raises its exception (the block's own
    first, if both failed)."""
    if not object_store(storage):
        work()
        yield
        return
    future = _threads().submit(work)
    try:
        yield
    finally:
        wait([future])
    future.result()


@contextmanager
def stored_file_paths(stored: Sequence[FieldFile]) -> Iterator[list[Path]]:
    """stored_file_path for several stored files at once (their copies fetched together,
    `storage_each`), in order; valid inside the `with` block."""
    if not stored:
        yield []
        return
    storage = stored[0].storage
    try:
        local = [Path(storage.path(_name_and_storage(field, None)[0])) for field in stored]
    except NotImplementedError:
        pass
    else:
        yield local
        return
    with tempfile.TemporaryDirectory(prefix="evalserver-") as folder:
        def fetch(item: tuple[int, FieldFile]) -> Path:
            name, storage = _name_and_storage(item[1], None)
            # one folder per file: two stored names may end alike
            copy = Path(folder) / str(item[0]) / PurePosixPath(name).name
            copy.parent.mkdir()
            with open(copy, "wb") as target:
                stored_copy(name, storage=storage, target=target)
            return copy

        yield storage_each(storage, fetch, list(enumerate(stored)))


def stored_copy(name: str, *, storage: Storage | None = None, target: BinaryIO) -> None:
    """Write a stored file into `target` in parts, never whole in memory.

    From S3 (django-storages' S3Storage, or leaderboard/common/object_storage.py's: those
    have a `bucket_name`) in one streamed GET through the client: their file object asks the
    size first, then fetches through boto3's transfer manager from a resource object, twice
    the requests and about three times the work for a file read once from start to end (the
    cost bench/cluster.py --s3 measures).

    Raises FileNotFoundError when the storage has no such file (S3: the GET's 404), so a
    caller that may find nothing asks once, with no HEAD (exists()) before the GET."""
    storage = storage or default_storage
    if object_store(storage):
        # only ever loaded with the S3 storage
        from botocore.exceptions import ClientError
        from storages.utils import clean_name

        # the key as S3Storage's own _open makes it (its `location` prefix included)
        s3: Any = storage  # django-storages has no types
        key = s3._normalize_name(clean_name(name))
        try:
            answer = _s3_client(s3).get_object(Bucket=s3.bucket_name, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise FileNotFoundError(f"{name} is not in the storage") from exc
            raise
        body = answer["Body"]
        try:
            for chunk in body.iter_chunks(1 << 20):
                target.write(chunk)
        finally:
            body.close()
        return
    with storage.open(name, "rb") as source:
        shutil.copyfileobj(source, target, length=1 << 20)


@contextmanager
def stored_npz(stored: FieldFile | str, *, storage: Storage | None = None
               ) -> Iterator[np.lib.npyio.NpzFile]:
    """A stored .npz opened for reading (no pickles), straight from the storage's file."""
    name, storage = _name_and_storage(stored, storage)
    with storage.open(name, "rb") as handle, np.load(handle, allow_pickle=False) as arrays:
        yield arrays
