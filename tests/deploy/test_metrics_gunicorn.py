"""/metrics under real gunicorn with two worker processes, in prometheus_client's multiprocess
mode (PROMETHEUS_MULTIPROC_DIR, as scripts/serve.sh and docker/entrypoint.sh start it): the
requests each process answered add up in one scrape, those of workers that have since been
replaced included (gunicorn's child_exit marks them dead: evalserver/gunicorn_conf.py)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.local_gunicorn import gunicorn, http_get, production_env, wait_until
from tests.helpers import free_port

pytestmark = pytest.mark.slow

UNMATCHED_404 = ("evalserver_http_request_duration_seconds_count",
                 frozenset({"method": "GET", "route": "unmatched", "status": "404"}.items()))


def _children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def test_it_adds_up_the_requests_of_every_worker_process(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    port = free_port()
    env = production_env(
        tmp_path, EVALSERVER_UPLOAD_TEMP_DIR=str(tmp_path / "uploads"),
        PROMETHEUS_MULTIPROC_DIR=str(metrics), WEB_CONCURRENCY="2", WEB_THREADS="2")
    with gunicorn(env, port, tmp_path / "gunicorn.log") as master:
        wait_until(lambda: len(_children(master.pid)) == 2, "two workers")
        first = _children(master.pid)
        # requests to no URL: answered without the database, timed as route "unmatched"
        assert [http_get(port, "/api/nothing-here/")[0] for _ in range(6)] == [404] * 6
        for pid in first:  # both replaced: the next requests go to other processes
            os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not _children(master.pid) & first
                   and len(_children(master.pid)) == 2, "two new workers")
        second = _children(master.pid)
        assert [http_get(port, "/api/nothing-here/")[0] for _ in range(4)] == [404] * 4

        status, text = http_get(port, "/metrics")  # from 127.0.0.1: allowed by default

        assert status == 200, text
        scraped = {(sample.name, frozenset(sample.labels.items())): sample.value
                   for family in text_string_to_metric_families(text)
                   for sample in family.samples}
        assert scraped[UNMATCHED_404] == 6 + 4
        # the counts come from the files of processes of both generations
        writers = {int(path.stem.rsplit("_", 1)[1]) for path in metrics.glob("*.db")}
        assert writers & first and writers & second, (writers, first, second)
