"""The production topology on one machine, each host a Linux network namespace (shared by
tests/deploy/test_multi_host.py and bench/cluster.py, faults.py and chaos.py; the hosts'
processes are read in tests/deploy/processes.py).

    switch namespace: bridge br0, one veth pair per host (the host's end is its eth0)
      db        10.231.0.10  PostgreSQL (a throwaway cluster, password over TCP)
      queue     10.231.0.11  redis-server with requirepass
      web       10.231.0.12  gunicorn evalserver.wsgi, celery beat (exactly one)
      client    10.231.0.13  where the caller's HTTP requests and SQL checks run
      worker-*  10.231.0.14+ celery -A evalserver worker -Q cpu
    (a `-Q notify` worker where a caller starts one: `worker_start("web", queue="notify")`)

Every process is started with `ip netns exec <namespace>` and its own UTS namespace named
after its host, so a worker's `--hostname cpu@%h` (and its log) says which host it is. They
share one MEDIA_ROOT on this machine's disk (the shared disk) and the data directory. No
namespace has a default route, so nothing leaves the bridge; two runs at once do not meet,
each having its own bridge. `Cluster.close` removes every process, namespace and file.

The caller talks to the hosts from a thread that entered the client namespace (setns(2)
moves only the calling thread): `Cluster.in_client(fn)`, `Cluster.sql(...)`.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.deploy.local_gunicorn import THROTTLES_OFF
from tests.deploy.processes import cpu_ticks, enter_namespace, namespace_pids

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SUBNET = "10.231.0"
DB_PORT, REDIS_PORT, WEB_PORT = 5432, 6379, 8000
T = TypeVar("T")


def postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return found[-1].parent if found else None


def unavailable_reason() -> str | None:
    """Why this machine cannot build the topology, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and veth pairs)"
    for tool, package in (("ip", "iproute2"), ("unshare", "util-linux"),
                          ("runuser", "util-linux"), ("redis-server", "redis-server")):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install {package})"
    if postgres_bin() is None:
        return "PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no 'postgres' user to run PostgreSQL as"
    probe = f"evs-probe-{os.getpid()}"
    added = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if added.returncode != 0:
        return f"`ip netns add` does not work here: {added.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass(frozen=True)
class Host:
    role: str
    namespace: str
    address: str


class ClusterError(Exception):
    """A step of building or running the topology failed (with its output)."""


class Cluster:
    def __init__(self, *, data_dir: Path, workers: Iterable[str] = ("worker-a", "worker-b"),
                 env: dict[str, str] | None = None, worker_concurrency: int = 1,
                 durable: bool = False) -> None:
        tag = secrets.token_hex(3)
        self.workdir = Path(tempfile.mkdtemp(prefix="evalserver-cluster-"))
        self.workdir.chmod(0o755)  # PostgreSQL runs as its own user below it
        self.media_root = self.workdir / "media"
        self.media_root.mkdir()
        self.worker_roles = tuple(workers)
        self.worker_concurrency = worker_concurrency
        # `durable`: nothing acknowledged is lost when Redis or PostgreSQL is killed (as in
        # production): Redis keeps its append-only file, PostgreSQL commits synchronously
        # (fsync stays off: a killed process leaves its writes in the page cache). Off by
        # default, for speed and because bench/faults.py restarts Redis empty on purpose.
        self.durable = durable
        roles = ("db", "queue", "web", "client", *self.worker_roles)
        self.hosts = {role: Host(role, f"evs{tag}-{role}", f"{SUBNET}.{10 + i}")
                      for i, role in enumerate(roles)}
        self.switch = f"evs{tag}-switch"
        self._namespaces: list[str] = []
        self._processes: dict[str, list[subprocess.Popen[bytes]]] = {r: [] for r in roles}
        self._client: ThreadPoolExecutor | None = None
        self._sql_connection: Any = None
        self._pg_ctl: list[str] = []
        self._pg_start: list[str] = []
        db_password, redis_password = secrets.token_hex(16), secrets.token_hex(16)
        self.database_url = (f"postgres://evalserver:{db_password}@"
                             f"{self.hosts['db'].address}:{DB_PORT}/evalserver")
        self.web_url = f"http://{self.hosts['web'].address}:{WEB_PORT}"
        self._db_password = db_password
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.workdir),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "evalserver.settings",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": self.hosts["web"].address,
            # Plain http between the hosts (no TLS proxy here): no redirect to https under
            # DEBUG=false (issue 12 §4: each secure default can be turned off by a variable).
            "SECURE_SSL_REDIRECT": "false",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": f"redis://:{redis_password}@{self.hosts['queue'].address}:"
                         f"{REDIS_PORT}/0",
            "MEDIA_ROOT": str(self.media_root),
            "EVALSERVER_DATA_DIR": str(data_dir),
            "EVALSERVER_DAILY_QUOTA": "0",
            **THROTTLES_OFF,
            **(env or {}),
        }
        self._redis_password = redis_password

    # -- building ---------------------------------------------------------------------------

    def start(self, *, benchmarks: Iterable[str] = ("cifar10", "imagenet"),
              workers: Iterable[str] | None = None) -> None:
        """Network, database, queue, web host (migrated, benchmarks loaded), beat, workers."""
        self.network()
        self.database()
        self.queue()
        self.manage("migrate", "--noinput")
        self.manage("load_benchmarks", *(f"--benchmark={slug}" for slug in benchmarks))
        self.web()
        self.beat()
        for role in self.worker_roles if workers is None else workers:
            self.worker_start(role)

    def _ip(self, *args: str) -> None:
        done = subprocess.run(["ip", *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise ClusterError(f"ip {' '.join(args)}: {done.stderr.strip()}")

    def network(self) -> None:
        self._ip("netns", "add", self.switch)
        self._namespaces.append(self.switch)
        self._ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.switch, "link", "set", "br0", "up")
        for i, host in enumerate(self.hosts.values()):
            self._ip("netns", "add", host.namespace)
            self._namespaces.append(host.namespace)
            port = f"p{i}"  # the switch's end of the pair; the host's end is its eth0
            self._ip("-n", self.switch, "link", "add", port, "type", "veth",
                     "peer", "name", "eth0", "netns", host.namespace)
            self._ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
            self._ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            self._ip("-n", host.namespace, "link", "set", "eth0", "up")
            self._ip("-n", host.namespace, "link", "set", "lo", "up")
        self._client = ThreadPoolExecutor(max_workers=1, thread_name_prefix="client-host",
                                          initializer=enter_namespace,
                                          initargs=(self.hosts["client"].namespace,))

    def _argv(self, role: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.hosts[role].namespace, "unshare", "--uts",
                "sh", "-c", 'hostname "$0" && exec "$@"', role, *argv]

    def run(self, role: str, argv: list[str], *, timeout: float = 300) -> str:
        """Run a command on a host to its end; its output, or ClusterError with it."""
        done = subprocess.run(self._argv(role, argv), cwd=PROJECT_ROOT, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
        if done.returncode != 0:
            raise ClusterError(f"{role}: {' '.join(argv)} exited {done.returncode}:\n"
                               f"{done.stdout}")
        return done.stdout

    def spawn(self, role: str, argv: list[str], log_name: str,
              env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with (self.workdir / log_name).open("ab") as log:
            process = subprocess.Popen(self._argv(role, argv), cwd=PROJECT_ROOT,
                                       env={**self.env, **(env or {})}, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        self._processes[role].append(process)
        return process

    def log(self, name: str) -> str:
        path = self.workdir / name
        return path.read_text(errors="replace") if path.exists() else ""

    def database(self) -> None:
        bin_dir = postgres_bin()
        assert bin_dir is not None, unavailable_reason()
        pg = self.workdir / "pg"
        pg.mkdir()
        shutil.chown(pg, "postgres", "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
        self.run("db", [*as_postgres, str(bin_dir / "initdb"), "-D", str(pg / "data"),
                        "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256",
                        "-E", "UTF8", "--no-sync"])
        with (pg / "data" / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {SUBNET}.0/24 scram-sha-256\n")
        self._pg_ctl = [*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(pg / "data")]
        options = (f"-p {DB_PORT} -k {pg} -c listen_addresses={self.hosts['db'].address} "
                   "-c fsync=off -c full_page_writes=off "
                   f"-c synchronous_commit={'on' if self.durable else 'off'} "
                   "-c max_connections=200")
        self._pg_start = [*self._pg_ctl, "-l", str(pg / "postgres.log"), "-w", "-t", "60",
                          "-o", options, "start"]
        self.run("db", self._pg_start)
        psql = [*as_postgres, str(bin_dir / "psql"), "-h", str(pg), "-p", str(DB_PORT),
                "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-c"]
        self.run("db", [*psql, f"CREATE ROLE evalserver LOGIN PASSWORD '{self._db_password}'"])
        self.run("db", [*psql, "CREATE DATABASE evalserver OWNER evalserver"])

    def database_stop(self, mode: str = "fast") -> None:
        """Stop PostgreSQL, as in an outage: "fast" cuts the open connections; "immediate"
        kills every server process, as a crash (recovery replays the WAL at the start)."""
        self.run("db", [*self._pg_ctl, "stop", "-m", mode, "-w"], timeout=60)

    def database_start(self) -> None:
        """Start the stopped PostgreSQL again, with its data."""
        self.run("db", self._pg_start)

    def queue(self) -> None:
        """Start Redis (again, after `host_stop("queue")` or `host_kill("queue")`: empty, or
        `durable`, from its append-only file, as docker/compose.yaml's)."""
        (self.workdir / "redis").mkdir(exist_ok=True)
        self.spawn("queue", ["redis-server", "--bind", self.hosts["queue"].address,
                             "--port", str(REDIS_PORT), "--requirepass", self._redis_password,
                             "--save", "", "--appendonly",
                             "yes" if self.durable else "no",
                             "--dir", str(self.workdir / "redis")], "redis.log")
        self.wait_for_port("queue", REDIS_PORT)

    def manage(self, *args: str) -> str:
        """`manage.py <args>` on the web host."""
        return self.run("web", [sys.executable, "manage.py", *args])

    def user_create(self, username: str, password: str) -> None:
        self.manage("shell", "-c",
                    "from django.contrib.auth import get_user_model; "
                    f"get_user_model().objects.create_user({username!r}, password={password!r})")

    def web(self) -> None:
        self.spawn("web", [sys.executable, "-m", "gunicorn", "-c", "evalserver/gunicorn_conf.py",
                           "evalserver.wsgi", "--bind", f"{self.hosts['web'].address}:{WEB_PORT}",
                           "--access-logfile", "-"],
                   "gunicorn.log")
        self.wait_for_port("web", WEB_PORT, log_name="gunicorn.log")

    def beat(self) -> None:
        self.spawn("web", [sys.executable, "-m", "celery", "-A", "evalserver", "beat",
                           "--loglevel", "INFO"], "beat.log")

    def worker_start(self, role: str, *, queue: str = "cpu", timeout: float = 90) -> None:
        """A worker on the cpu queue (or `queue`: "notify", on the web host, say) on a host
        (again, after `host_kill`), returned once its log says it is ready."""
        log_name = f"{role}.log" if queue == "cpu" else f"{role}-{queue}-worker.log"
        ready = self.log(log_name).count(f"{queue}@{role} ready.")
        process = self.spawn(role, [sys.executable, "-m", "celery", "-A", "evalserver",
                                    "worker", "-Q", queue, "--hostname", f"{queue}@%h",
                                    "--concurrency", str(self.worker_concurrency),
                                    "--loglevel", "INFO"], log_name)
        deadline = time.monotonic() + timeout
        while self.log(log_name).count(f"{queue}@{role} ready.") == ready:
            if process.poll() is not None or time.monotonic() > deadline:
                raise ClusterError(f"{role}: the worker did not start\n{self.log(log_name)}")
            time.sleep(0.1)

    def wait_for_port(self, role: str, port: int, *, timeout: float = 60,
                      log_name: str = "") -> None:
        """Until the host answers on `port`, connecting from the client host."""
        address = self.hosts[role].address

        def connects() -> bool:
            try:
                socket.create_connection((address, port), timeout=1).close()
                return True
            except OSError:
                return False

        deadline = time.monotonic() + timeout
        while not self.in_client(connects):
            if time.monotonic() > deadline:
                raise ClusterError(f"{role}: nothing answers on {address}:{port}\n"
                                   f"{self.log(log_name) if log_name else ''}")
            time.sleep(0.2)

    # -- running ----------------------------------------------------------------------------

    def in_client(self, fn: Callable[..., T], *args: Any, timeout: float = 120) -> T:
        """Call fn(*args) on the client host (in the thread that entered its namespace)."""
        assert self._client is not None, "network() first"
        return self._client.submit(fn, *args).result(timeout=timeout)

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a query to the database host, over TCP from the client host."""

        def fetch() -> list[tuple[Any, ...]]:
            import psycopg

            if self._sql_connection is None or self._sql_connection.broken:  # a restart
                self._sql_connection = psycopg.connect(self.database_url, autocommit=True,
                                                       connect_timeout=5)
            with self._sql_connection.cursor() as cursor:
                cursor.execute(query, params)
                return list(cursor.fetchall())

        return self.in_client(fetch)

    def pids(self, role: str) -> list[int]:
        """Every process on a host (in its namespace)."""
        return namespace_pids(self.hosts[role].namespace)

    def cpu_seconds(self, role: str) -> float:
        """CPU time of a host's processes so far, the children they reaped included."""
        return sum(cpu_ticks(pid) for pid in self.pids(role)) / os.sysconf("SC_CLK_TCK")

    def host_kill(self, role: str) -> None:
        """SIGKILL every process on a host at once, as when its machine dies."""
        deadline = time.monotonic() + 10
        while pids := self.pids(role):
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                raise ClusterError(f"{role}: processes {pids} survive SIGKILL")
            time.sleep(0.05)
        for process in self._processes[role]:
            process.wait(timeout=10)

    def host_stop(self, role: str, *, timeout: float = 30) -> None:
        """SIGTERM to the processes started on a host (a worker's warm shutdown: it finishes
        its task first); SIGKILL to what is left after `timeout`."""
        for process in self._processes[role]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self._processes[role]:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.host_kill(role)
        self._processes[role] = []

    # -- removing ---------------------------------------------------------------------------

    def close(self, *, keep_logs_in: Path | None = None) -> None:
        """Stop every process, remove every namespace (their veths and the bridge go with
        them) and the work directory; logs are copied to `keep_logs_in` first. Does every
        step even when one fails, then raises the first failure."""
        errors: list[BaseException] = []

        def attempt(step: Callable[..., object], *args: Any, **kwargs: Any) -> None:
            try:
                step(*args, **kwargs)
            except BaseException as exc:  # every step runs; the first failure is raised below
                errors.append(exc)

        if self._client is not None:
            if self._sql_connection is not None:
                attempt(self.in_client, self._sql_connection.close, timeout=10)
            attempt(self._client.shutdown, wait=True)
        for role in (*self.worker_roles, "web", "queue"):
            if self.hosts[role].namespace in self._namespaces:
                attempt(self.host_stop, role, timeout=15)
        if self._pg_ctl:
            attempt(self.run, "db", [*self._pg_ctl, "stop", "-m", "fast", "-w"], timeout=60)
        roles = {host.namespace: host.role for host in self.hosts.values()}
        for namespace in reversed(self._namespaces):
            if namespace in roles:
                attempt(self.host_kill, roles[namespace])
            attempt(self._ip, "netns", "del", namespace)
        self._namespaces = []
        if keep_logs_in is not None:
            keep_logs_in.mkdir(parents=True, exist_ok=True)
            for log in (*self.workdir.glob("*.log"), *self.workdir.glob("pg/*.log")):
                attempt(shutil.copy, log, keep_logs_in / log.name)
        attempt(shutil.rmtree, self.workdir)
        if errors:
            raise errors[0]
