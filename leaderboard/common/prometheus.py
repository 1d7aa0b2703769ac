"""The Prometheus metrics recorded where their events happen (docs/operations-metrics.md lists
them, what each means and the alerts on them). `/metrics` (evalserver/metrics_endpoint.py)
serves them with the ones computed when it is scraped (submissions by status, queue depths).

Each process records into prometheus_client's metrics. Under gunicorn and Celery's prefork
pool every process is a fork, so the server starts each family of processes with
PROMETHEUS_MULTIPROC_DIR set to a fresh folder (scripts/serve.sh, docker/entrypoint.sh):
prometheus_client then keeps every value in a file of that folder named after the process,
and a scrape adds the files up. Without it (tests, `manage.py shell`) the values stay in the
process. Only counters and histograms are recorded here: their sums over processes mean
something whichever process recorded them; gauges are computed at scrape time instead.

Every label has a bounded set of values (kinds, failure codes, benchmark slugs, URL route
patterns), never a path or an id: each value is a time series of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

from prometheus_client import Counter, Histogram

PREFIX = "evalserver"
# Seconds: from a fast scoring to a checkpoint's inference near its time limit.
JOB_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

HTTP_REQUEST_DURATION = Histogram(
    f"{PREFIX}_http_request_duration_seconds",
    "Time to answer an HTTP request, by method, URL route pattern and status code.",
    ["method", "route", "status"])
JOB_DURATION = Histogram(
    f"{PREFIX}_job_duration_seconds",
    "Time a worker spent on one claimed job (a submission's scoring, an audit, ...), by job "
    "kind and outcome (finished, failed, skipped).",
    ["kind", "outcome"], buckets=JOB_BUCKETS)
JOB_FAILURES = Counter(
    f"{PREFIX}_job_failures",
    "Jobs that ended failed, by job kind and failure code (the user's error's code, "
    "time_limit, worker_lost, internal_error).",
    ["kind", "code"])
SUBMISSION_SCORED_LATENCY = Histogram(
    f"{PREFIX}_submission_scored_latency_seconds",
    "From a submission's creation to its scores being stored, by benchmark.",
    ["benchmark"], buckets=JOB_BUCKETS)
SWEEP_REQUEUED = Counter(
    f"{PREFIX}_sweep_requeued",
    "Jobs the sweep sent again (their worker or message was lost), by job kind.",
    ["kind"])
SIGNIFICANCE_REFRESH_DURATION = Histogram(
    f"{PREFIX}_significance_refresh_duration_seconds",
    "Time to refresh the stored significance (rank_ub) of one benchmark's public boards.",
    buckets=JOB_BUCKETS)


def http_request_observe(*, method: str, route: str, status: int, seconds: float) -> None:
    HTTP_REQUEST_DURATION.labels(method, route, str(status)).observe(seconds)


def job_observe(*, kind: str, outcome: str, seconds: float) -> None:
    JOB_DURATION.labels(kind, outcome).observe(seconds)


def job_failures_count(*, kind: str, code: str, count: int = 1) -> None:
    if count:
        JOB_FAILURES.labels(kind, code).inc(count)


def submission_scored_observe(*, benchmark: str, seconds: float) -> None:
    SUBMISSION_SCORED_LATENCY.labels(benchmark).observe(max(seconds, 0.0))


def sweep_requeued_count(*, kind: str, count: int) -> None:
    if count:
        SWEEP_REQUEUED.labels(kind).inc(count)


@contextmanager
def significance_refresh_timed() -> Iterator[None]:
    started = perf_counter()
    try:
        yield
    finally:
        SIGNIFICANCE_REFRESH_DURATION.observe(perf_counter() - started)
