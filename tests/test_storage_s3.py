"""The S3 storage (django-storages, boto3) against a real S3-compatible server on loopback
(moto's, tests/s3_server.py): an upload through the API is scored by a real worker process whose
own media and cache folders start empty (everything it reads comes from the bucket, the compiled
label sets cached on its disk); the storage out of reach is a 503 on the web side with nothing
recorded, and a retried, then scored, job on the worker's (docs/operators/many-machines.md, "Files
in object storage")."""

from __future__ import annotations

import re
import socket
import threading
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from django.core.files.storage import default_storage
from pytest_django.fixtures import Settings

from leaderboard.catalog import label_set_version_files
from leaderboard.catalog.models import LabelSetVersion
from leaderboard.catalog.selectors import label_set_versions_to_score
from leaderboard.common.storage import StorageUnavailable, storage_error_transient
from leaderboard.submissions.models import Submission, SubmissionFile
from leaderboard.tasks.registry import JOBS
from leaderboard.tasks.runner import job_run
from tests import factories, s3_server
from tests.api_support import SUBMISSIONS, poll, post_files, token_client, top1_accuracy
from tests.conftest import _running_worker, wait_for_status
from tests.helpers import free_port

EXAMPLE_SETS = {"original": "cifar10-test", "cifar10.1-v4": "cifar10.1-v4",
              "cifar10.1-v6": "cifar10.1-v6"}
MODEL = "resnet_basic_110"


def _use_s3(settings: Settings, endpoint: str, bucket: str) -> None:
    options = {**s3_server.storage_options(endpoint, bucket), "max_memory_size": 1 << 20}
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": s3_server.BACKEND, "OPTIONS": options}}
    label_set_version_files._load.cache_clear()  # read compiled versions from this store


@pytest.fixture
def s3_loaded(s3_endpoint: str, catalog_settings: Settings, monkeypatch: pytest.MonkeyPatch,
              run_load_benchmarks: Callable[..., tuple[str, str]]) -> str:
    """CIFAR-10 loaded into a fresh bucket, this process's storage; returns the bucket."""
    for name, value in s3_server.CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    bucket = f"evalserver-{uuid.uuid4().hex[:12]}"
    s3_server.bucket_create(s3_endpoint, bucket)
    _use_s3(catalog_settings, s3_endpoint, bucket)
    run_load_benchmarks("--benchmark=cifar10")
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    return bucket


def _worker_env(catalog_settings: Settings, tmp_path: Path, endpoint: str,
                bucket: str) -> dict[str, str]:
    """A worker host of its own: empty media and cache folders, the bucket its only store."""
    from django.db import connection

    db = connection.settings_dict
    assert db["ENGINE"].endswith("sqlite3") or db["HOST"], "a database the worker can reach"
    database_url = (f"sqlite:///{db['NAME']}" if db["ENGINE"].endswith("sqlite3") else
                    f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:"
                    f"{db['PORT'] or 5432}/{db['NAME']}")
    return {"DJANGO_SETTINGS_MODULE": "evalserver.settings_testing",
            "DATABASE_URL": database_url,
            "MEDIA_ROOT": str(tmp_path / "worker-media"),
            "EVALSERVER_CACHE_DIR": str(tmp_path / "worker-cache"),
            "EVALSERVER_DATA_DIR": str(catalog_settings.EVALSERVER_DATA_DIR),
            **s3_server.storage_env(endpoint, bucket)}


def _expected(data_dir: Path) -> dict[str, tuple[int, int]]:
    """(correct, total) per label set with the dataset's own labels, counted with numpy."""
    return {slug: top1_accuracy(data_dir, MODEL, example_set)[1:]
            for slug, example_set in EXAMPLE_SETS.items()}


def _stored_names(submission: Submission) -> set[str]:
    return {name for row in SubmissionFile.objects.filter(submission=submission)
            for name in (row.file.name, row.compact.name)}


@pytest.mark.django_db(transaction=True)
def test_it_scores_an_api_upload_on_a_worker_host_that_shares_no_disk(
    s3_loaded: str, s3_endpoint: str, catalog_settings: Settings, data_dir: Path,
    redis_url: str, tmp_path: Path
) -> None:
    env = _worker_env(catalog_settings, tmp_path, s3_endpoint, s3_loaded)
    client = token_client(factories.user_create())
    with _running_worker(redis_url, tmp_path / "worker.log", env, "s3") as worker:
        response = post_files(client, factories.cifar10_model_files(data_dir, MODEL),
                              benchmark="cifar10", model_name=MODEL)
        assert response.status_code == 201, response.content
        body = poll(client, response.json()["id"], timeout=240, log=worker.log)

    assert body["status"] == "scored", body
    scores = {slug: (body["scores"][slug]["correct"], body["scores"][slug]["total"])
              for slug in EXAMPLE_SETS}
    assert scores == _expected(data_dir)
    submission = Submission.objects.get(pk=body["id"])
    objects = set(s3_server.object_names(s3_endpoint, s3_loaded))
    assert _stored_names(submission) <= objects  # the upload and the worker's compact arrays
    # the worker read every compiled label set from the bucket, once, into its own cache ...
    hashes = set(LabelSetVersion.objects.filter(label_set__benchmark__slug="cifar10")
                 .values_list("content_hash", flat=True))
    assert {f"labelsets/{h}.npz" for h in hashes} <= objects
    cached = tmp_path / "worker-cache" / "labelsets"
    assert sorted(p.name for p in cached.iterdir()) == sorted(f"{h}.npz" for h in hashes)
    # ... and nothing by a path under either host's media folder
    assert not (tmp_path / "worker-media").exists()
    assert not Path(catalog_settings.MEDIA_ROOT).exists()


@pytest.mark.django_db(transaction=True)
def test_it_answers_503_and_records_nothing_while_the_storage_is_out_of_reach(
    s3_loaded: str, s3_endpoint: str, catalog_settings: Settings, data_dir: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # boto3's own retries: none, to be quick
    _use_s3(catalog_settings, f"http://127.0.0.1:{free_port()}", s3_loaded)
    client = token_client(factories.user_create())
    # as a server answers: the client does not re-raise what the handler answered
    client.raise_request_exception = False

    response = post_files(client, factories.cifar10_model_files(data_dir, MODEL),
                          benchmark="cifar10", model_name=MODEL)

    assert (response.status_code, response["Retry-After"], response.json()) == (503, "10", {
        "error": {"code": "storage_unavailable", "message": "the file storage does not "
                  "answer; nothing was stored. Try again in 10 s"}})
    assert Submission.objects.count() == 0
    assert [n for n in s3_server.object_names(s3_endpoint, s3_loaded)
            if not n.startswith("labelsets/")] == []
    listed = client.get(SUBMISSIONS)  # a request that reads no stored file is not affected
    assert (listed.status_code, listed.json()["count"]) == (200, 0)


@pytest.mark.django_db(transaction=True)
def test_it_makes_one_s3_request_on_the_web_and_two_on_the_worker_per_submission(
    s3_loaded: str, catalog_settings: Settings, data_dir: Path, sent: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # `sent`: the jobs are run below, not by a broker
    """The budget of a submission of predictions with no shared disk
    (docs/operators/many-machines.md, "Files in object storage"): the web PUTs its files as one
    zip; the worker GETs it and PUTs the submission's one compact file, and GETs each compiled
    label set once, the first time (then it is in its cache). No HEAD, no second GET, nothing
    listed or deleted. The web and the worker run in this process here (the job as the
    worker's task runs it), so one recorder sees both."""
    catalog_settings.EVALSERVER_CACHE_DIR = tmp_path / "worker-cache"  # a fresh worker host
    label_set_version_files._load.cache_clear()
    requests = s3_server.requests_recorded(monkeypatch, s3_loaded)
    client = token_client(factories.user_create())
    files = factories.cifar10_model_files(data_dir, MODEL)
    seen = []
    for run in range(2):
        requests.clear()
        response = post_files(client, files, benchmark="cifar10", model_name=f"{MODEL} {run}")
        assert response.status_code == 201, response.content
        web = [(method, key) for method, key, _ in requests]
        requests.clear()
        job_id = response.json()["id"]
        assert job_run(JOBS["submission"], Submission.Kind.PREDICTIONS, job_id=job_id,
                       task_id=f"task-{run}") == "scored"
        seen.append((job_id, web, [(method, key) for method, key, _ in requests]))

    versions = label_set_versions_to_score(benchmark=factories.cifar10())
    assert len(versions) == 5  # cifar10's label sets, one version each
    label_sets = [("GET", f"labelsets/{v.content_hash}.npz") for v in versions]
    for run, (job_id, web, worker) in enumerate(seen):
        rows = list(SubmissionFile.objects.filter(submission_id=job_id).order_by("pk"))
        assert [row.example_set.slug for row in rows] == list(EXAMPLE_SETS.values())
        [upload] = {str(row.file.name) for row in rows}
        assert upload.startswith("uploads/") and upload.endswith(f"/{job_id}.zip")
        assert {str(row.compact.name) for row in rows} == {f"compact/{job_id}.npz"}
        assert web == [("PUT", upload)]
        first_time = label_sets if run == 0 else []
        assert sorted(worker) == sorted([("GET", upload), ("PUT", f"compact/{job_id}.npz")]
                                        + first_time), worker
        with default_storage.open(upload, "rb") as handle, zipfile.ZipFile(handle) as archive:
            assert {name: archive.read(name) for name in archive.namelist()} == {
                f"{slug}.json": path.read_bytes() for slug, path in files.items()}
    assert [len(web) + len(worker) for _, web, worker in seen] == [1 + 2 + 5, 1 + 2]


class DroppingProxy:
    """A TCP forwarder to the S3 server that closes its first `drops` connections at once,
    as an endpoint going away does; the ones after are passed through."""

    def __init__(self, upstream: tuple[str, int], drops: int) -> None:
        self.upstream, self.drops_left, self.dropped = upstream, drops, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            if self.drops_left:
                self.drops_left, self.dropped = self.drops_left - 1, self.dropped + 1
                conn.close()
                continue
            upstream = socket.create_connection(self.upstream)
            for source, target in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


@pytest.mark.django_db(transaction=True)
def test_it_retries_a_scoring_while_the_storage_is_out_of_reach_then_scores_it(
    s3_loaded: str, s3_endpoint: str, catalog_settings: Settings, data_dir: Path,
    redis_url: str, tmp_path: Path
) -> None:
    host, port = s3_endpoint.removeprefix("http://").split(":")
    # An attempt of the task first GETs the submission's uploads (one zip) on a new connection
    # (none is left to reuse from a failed attempt): each attempt uses up one of the five drops,
    # so five attempts fail (of the six a task has), then it scores.
    proxy = DroppingProxy((host, int(port)), drops=5)
    env = {**_worker_env(catalog_settings, tmp_path, f"http://127.0.0.1:{proxy.port}",
                         s3_loaded),
           "AWS_MAX_ATTEMPTS": "1"}  # one request, one connection: no retry of boto3's own
    try:
        with _running_worker(redis_url, tmp_path / "worker.log", env, "s3") as worker:
            submission = factories.submission_for_model(data_dir, MODEL)
            status = wait_for_status(submission.pk, ("scored", "failed"), log=worker.log)
            log = worker.log.read_text()
    finally:
        proxy.close()

    assert status == "scored", log
    assert proxy.dropped == 5
    retries = re.findall(r"score_submission\[[0-9a-f-]+\] retry: Retry in .*StorageUnavailable",
                         log)
    assert len(retries) == 5, log
    assert len(re.findall(r"score_submission\[[0-9a-f-]+\] retry:", log)) == len(retries), log
    assert len(re.findall(r"Task leaderboard.tasks.cpu.score_submission\[[0-9a-f-]+\] received",
                          log)) == len(retries) + 1, log
    assert {s.label_set.slug: (s.correct, s.total) for s in submission.scores.all()
            if s.label_set.slug in EXAMPLE_SETS} == _expected(data_dir)
    assert _stored_names(submission) <= set(s3_server.object_names(s3_endpoint, s3_loaded))


@pytest.mark.parametrize(("error", "transient"), [
    (EndpointConnectionError(endpoint_url="http://s3:9000/b"), True),
    (ClientError({"Error": {"Code": "InternalError"},
                  "ResponseMetadata": {"HTTPStatusCode": 500}}, "PutObject"), True),
    (ClientError({"Error": {"Code": "SlowDown"},
                  "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetObject"), True),
    (ClientError({"Error": {"Code": "NoSuchKey"},
                  "ResponseMetadata": {"HTTPStatusCode": 404}}, "GetObject"), False),
    (ClientError({"Error": {"Code": "AccessDenied"},
                  "ResponseMetadata": {"HTTPStatusCode": 403}}, "PutObject"), False),
    (NoCredentialsError(), False),
    (StorageUnavailable("down"), True),
    (OSError("a local disk's"), False),
])
def test_it_tells_a_transient_storage_error_from_a_lasting_one(error: Exception,
                                                                transient: bool) -> None:
    assert storage_error_transient(error) is transient
    try:
        try:
            raise error
        except Exception as exc:
            raise ValueError("raised while handling it") from exc
    except ValueError as outer:
        assert storage_error_transient(outer) is transient



def test_it_makes_the_object_store_client_in_the_worker_before_its_pool_forks(
    s3_endpoint: str, settings: Settings
) -> None:
    from django.core.files.storage import default_storage

    from evalserver.storage_warm import _object_store_client_make

    _use_s3(settings, s3_endpoint, "evalserver-warm")
    storage: Any = default_storage
    assert getattr(storage._connections, "connection", None) is None
    _object_store_client_make()
    made = storage._connections.connection
    assert made is not None
    # the pool process's first file: the same client, none made again
    assert storage.connection is made
