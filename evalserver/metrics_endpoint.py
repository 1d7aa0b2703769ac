"""`GET /metrics`: the Prometheus metrics (docs/operations-metrics.md), answered before every
other middleware as /healthz is (evalserver/health.py), so that Prometheus scraping
`http://web:8000/metrics` gets them whatever ALLOWED_HOSTS and the https redirect say about
its Host header and scheme. Every other request is timed here, by its URL route pattern.

Not public: a client is let in when its address is one of EVALSERVER_METRICS_ALLOWED_IPS
(REMOTE_ADDR, which evalserver/client_address.py's middleware, before this one, sets from a
trusted proxy's X-Forwarded-For; from anyone else the header is never read) or
it sends `Authorization: Bearer <EVALSERVER_METRICS_TOKEN>`. Others get 403 in the error
shape.

What a scrape reports: the counters and histograms every process recorded
(leaderboard/common/prometheus.py), added up over the processes of PROMETHEUS_MULTIPROC_DIR when
it is set (else this process's own), and the gauges computed now from the database and the
broker (`StateCollector`): submissions by status, the oldest queued and running submission,
each queue's depth. Those are the web's alone: a worker's own endpoint
(evalserver/metrics_exporter.py) reports only what its processes recorded.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Callable, Iterable, Iterator
from time import perf_counter

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from leaderboard.common import prometheus
from leaderboard.jobs.broker import broker_queue_depths
from leaderboard.submissions.selectors import submission_oldest_waits, submission_status_counts

PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# A request that matched no URL pattern (a 404, or answered by a middleware before routing).
UNMATCHED = "unmatched"


# -- access ---------------------------------------------------------------------------------------

def metrics_access_allowed(remote_addr: str, authorization: str) -> bool:
    """Whether a client at `remote_addr` sending this Authorization header may read them."""
    token = settings.EVALSERVER_METRICS_TOKEN
    if token and authorization.startswith("Bearer ") and hmac.compare_digest(
            authorization[len("Bearer "):].strip().encode(), token.encode()):
        return True
    try:
        address = ipaddress.ip_address(remote_addr.strip())
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(network, strict=False)
               for network in settings.EVALSERVER_METRICS_ALLOWED_IPS)


REFUSED = {"error": {"code": "permission_denied",
                     "message": "the metrics are open to EVALSERVER_METRICS_ALLOWED_IPS and to "
                                "the bearer token EVALSERVER_METRICS_TOKEN only"}}


# -- what a scrape reports -------------------------------------------------------------------------

class StateCollector(Collector):
    """The gauges read at scrape time from the database and the broker. A source that does not
    answer is reported by `evalserver_metrics_source_up` 0, and its gauges are left out (a
    missing series, not a false 0)."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(f"{prometheus.PREFIX}_metrics_source_up",
                               "Whether this scrape could read the source (database, broker).",
                               labels=["source"])
        try:
            counts = submission_status_counts()
            waits = submission_oldest_waits(now=timezone.now())
        except DatabaseError:
            up.add_metric(["database"], 0)
        else:
            up.add_metric(["database"], 1)
            by_status = GaugeMetricFamily(f"{prometheus.PREFIX}_submissions",
                                          "Submissions in each status.", labels=["status"])
            for status, count in counts.items():
                by_status.add_metric([status], count)
            yield by_status
            oldest = GaugeMetricFamily(
                f"{prometheus.PREFIX}_submission_oldest_seconds",
                "Seconds the longest-queued submission has waited (status=queued), and the "
                "longest-running one has run (status=running); 0 when none.",
                labels=["status"])
            for status, seconds in waits.items():
                oldest.add_metric([status], seconds)
            yield oldest
        depths = broker_queue_depths()
        up.add_metric(["broker"], 0 if depths is None else 1)
        if depths is not None:
            depth = GaugeMetricFamily(f"{prometheus.PREFIX}_queue_depth",
                                      "Task messages waiting on each queue, not yet taken "
                                      "by a worker.", labels=["queue"])
            for queue, count in depths.items():
                depth.add_metric([queue], count)
            yield depth
        yield up


def metrics_text(*, state: bool) -> bytes:
    """The exposition text: every process's recorded metrics, and (`state`) the gauges read
    now."""
    folder = settings.PROMETHEUS_MULTIPROC_DIR
    if folder is None:
        recorded = generate_latest(REGISTRY)
    else:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(folder))
        recorded = generate_latest(registry)
    if not state:
        return recorded
    registry = CollectorRegistry()
    registry.register(StateCollector())
    return recorded + generate_latest(registry)


# -- the middleware -------------------------------------------------------------------------------

class MetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == PATH and request.method in ("GET", "HEAD"):
            if not metrics_access_allowed(request.META.get("REMOTE_ADDR", ""),
                                          request.META.get("HTTP_AUTHORIZATION", "")):
                return JsonResponse(REFUSED, status=403)
            return HttpResponse(metrics_text(state=True), content_type=CONTENT_TYPE)
        started = perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        # the pattern, never the path: a label value per route, not per submission id
        route = (match.route or match.view_name) if match is not None else UNMATCHED
        prometheus.http_request_observe(method=_method(request.method), route=route or UNMATCHED,
                                     status=response.status_code,
                                     seconds=perf_counter() - started)
        return response


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _method(method: str | None) -> str:
    """The method, or "other" for any a client made up (the label's values stay bounded)."""
    return method if method in _METHODS else "other"


def wsgi_metrics_app(environ: dict[str, object],
                     start_response: Callable[..., object]) -> Iterable[bytes]:
    """A worker's own /metrics (evalserver/metrics_exporter.py): what its processes recorded,
    behind the same access rules."""
    if environ.get("PATH_INFO") != PATH:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]
    if not metrics_access_allowed(str(environ.get("REMOTE_ADDR", "")),
                                  str(environ.get("HTTP_AUTHORIZATION", ""))):
        start_response("403 Forbidden", [("Content-Type", "application/json")])
        return [json.dumps(REFUSED).encode()]
    start_response("200 OK", [("Content-Type", CONTENT_TYPE)])
    return [metrics_text(state=False)]
