"""GET /metrics (evalserver/metrics_endpoint.py, docs/operations-metrics.md): who may read it, the
exact changes known work makes (a real Celery worker scoring and failing submissions, HTTP
requests to known routes), and the gauges read at scrape time against the database and the
broker counted independently."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import current_app
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard.submissions.models import Submission
from tests import factories
from tests.api_support import post_files, write_json
from tests.conftest import wait_for_status
from tests.settings_fixtures import RunSettings

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
TOKEN = "a-metrics-token-for-tests-only"
REFUSED = {"error": {"code": "permission_denied",
                     "message": "the metrics are open to EVALSERVER_METRICS_ALLOWED_IPS and to "
                                "the bearer token EVALSERVER_METRICS_TOKEN only"}}


def samples(text: str) -> Samples:
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(scraped: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for a labelled series not recorded yet (a counter not yet counted)."""
    return scraped.get((name, frozenset(labels.items())), 0.0)


def scrape(**headers: str) -> Samples:
    response = Client(**headers).get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return samples(response.content.decode())


# -- who may read them --------------------------------------------------------------------------

@pytest.mark.django_db
def test_it_refuses_another_address_without_the_token(settings: Settings) -> None:
    settings.EVALSERVER_METRICS_TOKEN = TOKEN

    refused = [Client(REMOTE_ADDR="203.0.113.7", **headers).get("/metrics") for headers in (
        {}, {"HTTP_AUTHORIZATION": "Bearer not-the-token"}, {"HTTP_AUTHORIZATION": TOKEN},
        # X-Forwarded-For is read only from a trusted proxy (none here): anyone can send it
        {"HTTP_X_FORWARDED_FOR": "127.0.0.1"}, {"HTTP_X_REAL_IP": "127.0.0.1"})]

    assert [(r.status_code, json.loads(r.content)) for r in refused] == [(403, REFUSED)] * 5
    token = Client(REMOTE_ADDR="203.0.113.7", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert token.get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200


@pytest.mark.django_db
def test_it_lets_in_the_allowed_networks_only(settings: Settings) -> None:
    settings.EVALSERVER_METRICS_ALLOWED_IPS = ["10.1.0.0/16"]
    settings.EVALSERVER_METRICS_TOKEN = None

    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
    assert [Client(REMOTE_ADDR=address).get("/metrics").status_code
            for address in ("10.2.0.1", "127.0.0.1", "not an address")] == [403, 403, 403]
    assert Client(REMOTE_ADDR="10.2.0.1", HTTP_AUTHORIZATION="Bearer ").get(
        "/metrics").status_code == 403  # no token set: an empty one opens nothing


# -- HTTP requests, by route --------------------------------------------------------------------

@pytest.mark.django_db
def test_it_times_requests_by_route_pattern_not_path() -> None:
    before = scrape()
    client = Client()
    statuses = [client.get(path).status_code for path in (
        "/api/benchmarks/", "/api/benchmarks/", "/api/benchmarks/no-such-benchmark/",
        "/api/nothing-here/")]
    client.generic("BREW", "/api/benchmarks/")
    after = scrape()

    assert statuses == [200, 200, 404, 404]
    name = "evalserver_http_request_duration_seconds_count"

    def delta(route: str, status: str, method: str = "GET") -> float:
        labels = {"method": method, "route": route, "status": status}
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("api/benchmarks/", "200") == 2
    assert delta("api/benchmarks/<catalog_slug:slug>/", "404") == 1
    assert delta("unmatched", "404") == 1
    assert delta("api/benchmarks/", "405", method="other") == 1
    assert not any(dict(labels).get("route", "").endswith("no-such-benchmark/")
                   for _, labels in after)


# -- a real worker's known work -----------------------------------------------------------------

@pytest.fixture
def metrics_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                settings: Settings) -> Path:
    """The worker started after this records into this folder (multiprocess mode), and this
    process's /metrics reads it, as gunicorn's workers do theirs."""
    folder = tmp_path / "metrics"
    folder.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    # each scoring refreshes the significance at once: one refresh per scoring, countable
    monkeypatch.setenv("EVALSERVER_SIGNIFICANCE_DELAY", "0")
    settings.PROMETHEUS_MULTIPROC_DIR = folder
    return folder


@pytest.fixture
def gpu_queue(redis_url: str) -> Iterator[redis.Redis]:
    """The broker's Redis; the gpu queue (no worker of it here) emptied after the test."""
    client = redis.Redis.from_url(redis_url)
    client.delete("gpu")
    yield client
    client.delete("gpu")
    client.close()


MODEL = "resnet_basic_110"


@pytest.mark.django_db(transaction=True)
def test_it_counts_a_real_workers_scorings_and_failures(
        loaded: Settings, data_dir: Path, metrics_dir: Path, scoring_worker: Path,
        gpu_queue: redis.Redis, tmp_path: Path) -> None:
    loaded.EVALSERVER_INLINE_CHECK_BYTES = loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 0
    client = APIClient()
    client.force_authenticate(factories.user_create("alice"))
    paths = factories.cifar10_model_files(data_dir, MODEL)
    bad = [3] * 10_000
    bad[17] = 10
    before = scrape()

    def refreshed() -> float:
        return value(scrape(), "evalserver_significance_refresh_duration_seconds_count")

    # One at a time, each waited for with its refresh: a scoring committed while a refresh is
    # queued and not started queues none (that one covers it), so two quick scorings may share
    # one refresh.
    ids = []
    for n in range(2):
        ids.append(post_files(client, {"cifar10-test": paths["cifar10-test"]},
                              benchmark="cifar10", model_name=f"model {n}").json()["id"])
        assert wait_for_status(ids[-1], ("scored", "failed"), log=scoring_worker) == "scored"
        _until(lambda n=n: refreshed() >= n + 1, scoring_worker)
    ids.append(post_files(client, {"cifar10-test": write_json(tmp_path / "bad.json", bad)},
                          benchmark="cifar10", model_name="bad").json()["id"])
    assert wait_for_status(ids[-1], ("scored", "failed"), log=scoring_worker) == "failed"
    for n in range(3):  # messages no worker takes: what the queue depth counts
        current_app.send_task("leaderboard.tasks.gpu.no_such_task", args=[n], queue="gpu")
    after = scrape()

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    job = "evalserver_job_duration_seconds_count"
    assert delta(job, kind="submission", outcome="finished") == 2
    assert delta(job, kind="submission", outcome="failed") == 1
    assert delta(job, kind="submission", outcome="skipped") == 0
    assert delta("evalserver_job_failures_total", kind="submission",
                 code="class_out_of_range") == 1
    assert sum(v for (name, _), v in after.items()
               if name == "evalserver_job_failures_total") == 1
    latency = "evalserver_submission_scored_latency_seconds"
    assert delta(f"{latency}_count", benchmark="cifar10") == 2
    scored = Submission.objects.filter(id__in=ids[:2])
    assert delta(f"{latency}_sum", benchmark="cifar10") == pytest.approx(
        sum((s.finished_at - s.created).total_seconds() for s in scored), abs=1e-6)
    assert value(after, "evalserver_significance_refresh_duration_seconds_count") == 2
    # the gauges: the database and the broker, counted here on their own
    for status in ("queued", "running", "scored", "failed"):
        assert value(after, "evalserver_submissions", status=status) == (
            Submission.objects.filter(status=status).count()), status
    assert value(after, "evalserver_submissions", status="scored") == 2
    assert value(after, "evalserver_submission_oldest_seconds", status="queued") == 0
    assert value(after, "evalserver_queue_depth", queue="gpu") == gpu_queue.llen("gpu") == 3
    assert value(after, "evalserver_queue_depth", queue="cpu") == gpu_queue.llen("cpu") == 0
    assert value(after, "evalserver_metrics_source_up", source="database") == 1
    assert value(after, "evalserver_metrics_source_up", source="broker") == 1
    # the worker's pool process wrote its values in the folder, named by its pid
    assert any(path.suffix == ".db" for path in metrics_dir.iterdir())


def _until(check: object, log: Path, timeout: float = 120) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail("not within the time allowed; the worker's log:\n" + log.read_text())
        time.sleep(0.2)


# -- the sweep ---------------------------------------------------------------------------------

@pytest.fixture
def broker_unreadable() -> Iterator[None]:
    """The sweep cannot read the broker: only its long cutoffs apply
    (tests/jobs/test_lifecycle.py)."""
    from evalserver.celery import app
    from tests.conftest import _point_celery_app
    from tests.helpers import free_port

    saved = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend}
    nobody = f"redis://127.0.0.1:{free_port()}/0"
    _point_celery_app(app, broker_url=nobody, result_backend=nobody)
    yield
    _point_celery_app(app, **saved)


@pytest.mark.django_db
def test_it_counts_the_sweeps_requeues_and_lost_workers(
        loaded: Settings, broker_unreadable: None, sent: list[tuple[str, int]]) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.jobs.sweep import jobs_sweep
    from leaderboard.tasks.registry import JOBS

    long_ago = timezone.now() - timedelta(hours=2)  # past every task's hard time limit
    out_of_attempts = loaded.EVALSERVER_SCORING_MAX_ATTEMPTS

    def submission(n: int, **fields: object) -> Submission:
        return Submission.objects.create(owner=factories.user_create(f"owner{n}"),
                                         benchmark=factories.cifar10(),
                                         model_name=f"model {n}", **fields)

    lost = [submission(n, queued_at=long_ago) for n in range(2)]  # never started
    crashed = submission(2, status="running", started=long_ago, attempts=1, claimed_by="t2")
    spent = submission(3, status="running", started=long_ago, attempts=out_of_attempts,
                       claimed_by="t3")
    before = scrape()

    requeued = jobs_sweep(JOBS["submission"])
    after = scrape()

    assert sorted(requeued) == sorted([lost[0].pk, lost[1].pk, crashed.pk])
    assert Submission.objects.get(pk=spent.pk).failure_code == "worker_lost"

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("evalserver_sweep_requeued_total", kind="submission") == 3
    assert delta("evalserver_sweep_requeued_total", kind="audit") == 0
    assert delta("evalserver_job_failures_total", kind="submission", code="worker_lost") == 1


# -- settings ----------------------------------------------------------------------------------

def test_it_fails_loudly_on_bad_metrics_settings(tmp_path: Path,
                                                run_settings: RunSettings) -> None:
    result = run_settings(SECRET_KEY="x" * 50, EVALSERVER_METRICS_ALLOWED_IPS="10.0.0.0/8,office",
                          EVALSERVER_METRICS_TOKEN="short",
                          PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "missing"),
                          EVALSERVER_METRICS_WORKER_PORT="-1")

    assert result.failed
    for line in ("EVALSERVER_METRICS_ALLOWED_IPS='10.0.0.0/8,office' is not valid: expected "
                 "comma-separated IP addresses or networks such as 172.16.0.0/12,10.0.0.5",
                 "EVALSERVER_METRICS_TOKEN is too short: expected at least 16 characters",
                 f"PROMETHEUS_MULTIPROC_DIR={tmp_path / 'missing'} is not a folder: create it "
                 "(empty) before starting the server",
                 "EVALSERVER_METRICS_WORKER_PORT='-1' is not valid: expected an integer >= 0"):
        assert line in result.output
