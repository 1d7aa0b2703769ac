"""An S3-compatible server for the tests of the S3 storage (tests/test_storage_s3.py, on
loopback) and the no-shared-disk topology (tests/deploy/object_store.py, on its own
namespace host): moto's S3 (requirements-dev.txt), served by this file run as a script
(`server_argv`).

Not `python -m moto.server`: that serves every AWS service moto has, and finds the one a
request is for by listing moto's package folder from disk on each request (about 200 stat
calls, 1.5 ms of CPU a request: half its cost per request, bench/README.md, cluster.py). This
serves moto's S3 application alone (`create_backend_app("s3")`), CORS headers off (no browser
calls it), under gunicorn's threaded worker rather than moto's werkzeug server: werkzeug's
development server answers every request with `Connection: close`, so each S3 request paid a
new TCP connection and a new server thread (on both sides: about 1 ms of CPU a request,
bench/README.md, cluster.py), where S3 itself keeps connections alive and boto3 reuses them.
(gunicorn drops request headers with an underscore in their name; moto's own handler keeps
them for S3 metadata keys, which this project never sets.)

It keeps its objects in memory: a restart empties it. `storage_env` is the environment that
points a web or worker process at a bucket in it (docs/operators/many-machines.md, "Files in object
storage")."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# moto accepts any credentials; boto3 wants some, and a region
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "evalserver-test", "AWS_SECRET_ACCESS_KEY": "not-a-secret",
               "AWS_DEFAULT_REGION": "us-east-1"}


BACKEND = "leaderboard.common.object_storage.S3Storage"


def server_argv(host: str, port: int) -> list[str]:
    """The command that runs the server on host:port (this file as a script: it needs no
    current folder or path to find the project)."""
    return [sys.executable, os.path.abspath(__file__), host, str(port)]


def serve(host: str, port: int) -> None:
    """moto's S3 application alone, until killed (moto reads its settings at import)."""
    os.environ.setdefault("MOTO_DISABLE_GLOBAL_CORS", "true")
    from gunicorn.app.base import BaseApplication
    from moto.moto_server.werkzeug_app import create_backend_app

    class Server(BaseApplication):
        def load_config(self) -> None:
            # one process: moto keeps the bucket in its memory; threads for concurrent
            # requests; no grace on stop (nothing of it is worth finishing)
            for name, value in {"bind": f"{host}:{port}", "workers": 1,
                                "worker_class": "gthread", "threads": 8, "keepalive": 60,
                                "graceful_timeout": 1, "loglevel": "warning"}.items():
                self.cfg.set(name, value)

        def load(self) -> Any:
            return create_backend_app("s3")

    Server().run()


def storage_options(endpoint: str, bucket: str) -> dict[str, Any]:
    """EVALSERVER_STORAGE_OPTIONS for django-storages' S3Storage on this server."""
    return {"bucket_name": bucket, "endpoint_url": endpoint, "region_name": "us-east-1",
            # by path: a bucket name is no host name on a bare IP address
            "addressing_style": "path"}


def storage_env(endpoint: str, bucket: str) -> dict[str, str]:
    return {"EVALSERVER_STORAGE_BACKEND": BACKEND,
            "EVALSERVER_STORAGE_OPTIONS": json.dumps(storage_options(endpoint, bucket)),
            **CREDENTIALS}


def client(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])


def bucket_create(endpoint: str, bucket: str) -> None:
    client(endpoint).create_bucket(Bucket=bucket)


def object_names(endpoint: str, bucket: str) -> list[str]:
    """Every object's name in the bucket, sorted."""
    pages = client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


def wait_until_answers(host: str, port: int, process: subprocess.Popen[bytes],
                       timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto server did not start on {host}:{port}") from None
            time.sleep(0.1)


def requests_recorded(monkeypatch: Any, bucket: str) -> list[tuple[str, str, str | None]]:
    """Every HTTP request this process's boto3 clients send from now on (each attempt, before
    any answer), as (method, key in `bucket`, Range header or None), in order; `monkeypatch`:
    pytest's, which puts botocore back after the test."""
    from urllib.parse import unquote, urlsplit

    from botocore.endpoint import Endpoint

    sent: list[tuple[str, str, str | None]] = []
    send = Endpoint._send

    def recorded(self: Endpoint, request: Any) -> Any:
        path = unquote(urlsplit(request.url).path).removeprefix(f"/{bucket}/")
        range_header = request.headers.get("Range")
        sent.append((request.method, path,
                     range_header.decode() if isinstance(range_header, bytes) else range_header))
        return send(self, request)

    monkeypatch.setattr(Endpoint, "_send", recorded)
    return sent


@contextmanager
def running_on_loopback() -> Iterator[str]:
    """A server on a free loopback port for the block; its endpoint URL."""
    from tests.helpers import free_port, process_group_stop

    port = free_port()
    process = subprocess.Popen(server_argv("127.0.0.1", port), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until_answers("127.0.0.1", port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process_group_stop(process)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
