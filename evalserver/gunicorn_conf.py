"""gunicorn's settings, the one place for them: scripts/serve.sh, docker/entrypoint.sh (the
compose `web`), tests/deploy/topology.py and the benches all run

    gunicorn -c evalserver/gunicorn_conf.py evalserver.wsgi --bind HOST:PORT [--access-logfile -]

from the project root, and only the address and the log differ.

Threaded workers (`gthread`): a request holds one of a worker's WEB_THREADS threads, not the
whole process. With sync workers a client uploading slowly held a process for as long as it
took: two such clients held both workers, so /healthz and the leaderboard went unanswered, and
gunicorn's timeout killed the worker mid-upload (an empty 500, its temporary files left
behind). A gthread worker's main loop keeps reporting to gunicorn while its threads wait on
clients, so `timeout` only kills a worker that stopped altogether. How long a request body may
take is the application's limit (EVALSERVER_UPLOAD_STALL_TIMEOUT and _DEADLINE,
leaderboard/common/request_body.py); in production the reverse proxy in front buffers whole
bodies first (docker/nginx/), so a slow client never reaches gunicorn at all.

The headers have no limit: a thread reads them as slowly as the client sends them, so a few
clients trickling theirs (16 at a byte every 2 s) hold every thread and nothing else is
answered. No setting of gunicorn's bounds that, which is why a reverse proxy must be in front
on any address others can reach, and scripts/serve.sh refuses to bind one without it
(docs/operators/one-machine.md, "Reachable from other machines").

Read from the environment (or the project's .env, as the settings read it), checked the same
way: a bad value stops gunicorn with a message naming the variable.
"""

from __future__ import annotations

import sys
from pathlib import Path

import environ

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:  # gunicorn's console script does not put it there
    sys.path.insert(0, str(PROJECT_ROOT))

from evalserver.env import EnvReader  # noqa: E402 - needs the path above

if (PROJECT_ROOT / ".env").is_file():
    environ.Env.read_env(PROJECT_ROOT / ".env")
_env = EnvReader(PROJECT_ROOT)

worker_class = "gthread"
# processes, and threads in each: WEB_CONCURRENCY x WEB_THREADS requests at once
workers = _env.get_int("WEB_CONCURRENCY", 2, min_value=1)
threads = _env.get_int("WEB_THREADS", 4, min_value=1)
# seconds a worker may go without reporting before gunicorn restarts it (a gthread worker
# reports from its main loop, whatever its threads are waiting on), and that a stopping
# worker has to finish its requests
timeout = 30
graceful_timeout = 30
# seconds an idle kept-alive connection is kept (it holds no thread meanwhile)
keepalive = 5
# nothing here is controlled at run time (gunicorn's `gunicornc` socket)
control_socket_disable = True

_env.check()


def child_exit(server: object, worker: object) -> None:
    """A web worker that ended is marked dead for prometheus_client's multiprocess mode
    (evalserver/metrics_exporter.py does it for Celery's pool processes)."""
    from evalserver.metrics_exporter import process_mark_dead

    process_mark_dead(worker.pid)  # type: ignore[attr-defined]
