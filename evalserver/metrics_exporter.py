"""The metrics side of a Celery worker (connected by evalserver/celery.py), in prometheus_client's
multiprocess mode (PROMETHEUS_MULTIPROC_DIR: leaderboard/common/prometheus.py says why):

- a pool process that ends is marked dead, as gunicorn's child_exit does for a web worker
  (evalserver/gunicorn_conf.py): its counters stay counted, its live gauges go;
- with EVALSERVER_METRICS_WORKER_PORT set, the worker's main process serves GET /metrics on
  that port (a thread, the web's access rules: evalserver/metrics_endpoint.py) for a Prometheus that
  cannot read the web's folder, as docker/compose.yaml's `monitoring` profile scrapes each
  worker container.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from celery.signals import worker_process_shutdown, worker_ready

log = logging.getLogger(__name__)


def process_mark_dead(pid: int) -> None:
    """Tell prometheus_client that this process is gone (multiprocess mode only)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


@worker_process_shutdown.connect
def _pool_process_ended(pid: int | None = None, **_: Any) -> None:
    process_mark_dead(pid or os.getpid())


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # a scrape every 15 s is not worth a log line


@worker_ready.connect
def _serve_metrics(**_: Any) -> None:
    from django.conf import settings

    port = settings.EVALSERVER_METRICS_WORKER_PORT
    if not port:
        return
    from evalserver.metrics_endpoint import wsgi_metrics_app

    address = settings.EVALSERVER_METRICS_WORKER_ADDRESS
    try:
        server: WSGIServer = make_server(address, port, wsgi_metrics_app,
                                         handler_class=_QuietHandler)
    except OSError as exc:  # the port is taken: the worker works on, unscraped
        log.error("cannot serve the worker's metrics on %s:%d (%s)", address, port, exc)
        return
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    log.info("serving the worker's metrics on %s:%d/metrics", address, port)
