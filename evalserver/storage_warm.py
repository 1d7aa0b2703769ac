"""A worker's object-store client, made once in its main process, before the pool forks.

With S3 storage (docs/operators/many-machines.md, "Files in object storage") the first stored file
a process reads or writes loads boto3 and django-storages and builds their session and S3 client:
about 0.25 s of CPU (2 cores, bench/README.md, cluster.py), paid again by every prefork pool
process on its first task. Made in the worker's main process at `worker_init` instead, the pool
processes inherit it when they fork. Safe to inherit: making it opens no connection (urllib3
connects on the first request, in the pool process), and django-storages keeps it per thread, the
pool process's main thread being the one it was made in. On the default file system storage nothing
is loaded. Connected by evalserver/celery.py.
"""

from __future__ import annotations

from typing import Any

from celery.signals import worker_init


@worker_init.connect
def _object_store_client_make(**_: Any) -> None:
    from django.core.files.storage import default_storage

    storage: Any = default_storage  # django-storages has no types
    if getattr(storage, "bucket_name", None):  # an S3 storage: its client, now
        # (made on first access; leaderboard/common/object_storage.py's is `client`)
        getattr(storage, "client", None) or storage.connection  # noqa: B018
