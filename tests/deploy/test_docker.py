"""docker/: what can be checked without pulling an image. The compose file names the services of
the production topology with their properties; docker/.env.example covers every setting with
its true default; the image installs what scripts/serve.sh installs; and every service's
command runs natively through docker/entrypoint.sh with the compose environment translated to
local addresses (a throwaway Redis with the password, SQLite, a loopback data mirror)."""

from __future__ import annotations

import ast
import contextlib
import http.client
import json
import os
import re
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.catalog.data_server import data_server
from tests.helpers import PROJECT_ROOT, free_port

DOCKER = PROJECT_ROOT / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = ("init", "web", "worker-cpu", "worker-gpu", "worker-notify", "beat")
WORKER_SERVICES = ("worker-cpu", "worker-gpu", "worker-notify")
# variables of .env.example that are compose's or the entrypoint's, not Django settings
COMPOSE_ONLY = {"POSTGRES_PASSWORD", "REDIS_PASSWORD", "TORCH_VARIANT", "EVALSERVER_IMAGE_TAG",
                "PROXY_HTTP_ADDRESS", "PROXY_HTTPS_ADDRESS", "TLS_CERT_DIR",
                "PROXY_TRUSTED_OUTER_PROXIES",
                "EVALSERVER_BENCHMARKS", "PROMETHEUS_ADDRESS"}
ENV_LINE = re.compile(r"^#?([A-Z][A-Z0-9_]*)=(.*)$")


def _example() -> dict[str, tuple[str, bool]]:
    """.env.example: name -> (value, commented out)."""
    found = {}
    for line in (DOCKER / ".env.example").read_text().splitlines():
        match = ENV_LINE.match(line)
        if match:
            found[match.group(1)] = (match.group(2), line.startswith("#"))
    return found


def _settings_variables() -> set[str]:
    """Every variable the settings package (evalserver/settings/) reads through its env
    helper."""
    trees = [ast.parse(path.read_text())
             for path in sorted((PROJECT_ROOT / "evalserver" / "settings").glob("*.py"))]
    return {node.args[0].value for tree in trees for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "env"
            and node.args and isinstance(node.args[0], ast.Constant)}


def _settings_page_tables() -> set[str]:
    """The variables of docs/operators/settings.md's tables (their first column)."""
    page = (PROJECT_ROOT / "docs" / "operators" / "settings.md").read_text()
    rows = [line.split("|")[1] for line in page.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row)}


def _interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?error}."""
    def one(match: re.Match[str]) -> str:
        name, _, default = match.group(1).partition(":")
        if name in variables:
            return variables[name]
        if default.startswith("?"):
            raise AssertionError(f"compose would stop: {default[1:]}")
        return default.removeprefix("-")
    return re.sub(r"\$\{([^}]+)\}", one, value)


# -- the files -------------------------------------------------------------------------------


def test_the_compose_file_names_each_service_with_its_role() -> None:
    assert set(SERVICES) == {"db", "redis", "proxy", "prometheus", *APP_SERVICES}
    assert set(COMPOSE["volumes"]) == {"pgdata", "redisdata", "media", "data", "uploads",
                                       "prometheusdata"}
    for name in APP_SERVICES:
        service = SERVICES[name]
        assert service["command"] == [name], name
        assert service["build"]["dockerfile"] == "docker/Dockerfile"
        environment = service["environment"]
        # the web's temporary upload files are shared with the cpu workers, whose hourly task
        # removes those a killed web process left
        shared = {"uploads:/app/var/uploads"} if name in ("web", "worker-cpu") else set()
        assert {f"media:{environment['MEDIA_ROOT']}",
                f"data:{environment['EVALSERVER_DATA_DIR']}", *shared} == set(service["volumes"])
    redis = " ".join(SERVICES["redis"]["command"])
    assert "--appendonly yes" in redis and '--requirepass "$$REDIS_PASSWORD"' in redis
    assert SERVICES["redis"]["volumes"] == ["redisdata:/data"]
    assert SERVICES["db"]["volumes"] == ["pgdata:/var/lib/postgresql/data"]
    assert SERVICES["init"]["restart"] == "no"
    assert SERVICES["worker-gpu"]["profiles"] == ["gpu"]
    assert SERVICES["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert SERVICES["worker-gpu"]["environment"]["EVALSERVER_INFERENCE_DEVICE"] == "cuda"
    # exactly one beat: its own service, one replica, and no worker runs one (-B)
    assert SERVICES["beat"]["deploy"]["replicas"] == 1
    assert "profiles" not in SERVICES["beat"]
    entrypoint = (DOCKER / "entrypoint.sh").read_text()
    assert entrypoint.count("celery -A evalserver beat") == 1
    assert " -B" not in entrypoint and "--beat" not in entrypoint


def test_the_services_start_in_order_and_have_healthchecks() -> None:
    for name in ("db", "redis", "web", "worker-cpu", "worker-gpu", "worker-notify", "beat",
                 "proxy"):
        assert SERVICES[name]["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
    assert SERVICES["proxy"]["depends_on"] == {"web": {"condition": "service_started"}}
    # nginx answers and reaches the web: /healthz is proxied over http, with or without TLS
    assert SERVICES["proxy"]["healthcheck"]["test"] == [
        "CMD", "curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1/healthz"]
    assert SERVICES["init"]["healthcheck"] == {"disable": True}
    assert SERVICES["init"]["depends_on"] == {"db": {"condition": "service_healthy"},
                                              "redis": {"condition": "service_healthy"}}
    for name in ("web", "worker-cpu", "worker-gpu", "worker-notify", "beat"):
        assert SERVICES[name]["depends_on"] == {
            "init": {"condition": "service_completed_successfully"},
            "db": {"condition": "service_healthy"}, "redis": {"condition": "service_healthy"}}
    for worker in ("worker-cpu", "worker-notify"):
        assert SERVICES[worker]["healthcheck"]["test"] == [
            "CMD", "/app/docker/entrypoint.sh", "ping", worker]
    assert SERVICES["beat"]["healthcheck"]["test"] == [
        "CMD", "/app/docker/entrypoint.sh", "ping", "beat"]


def test_only_the_proxy_is_published_and_it_buffers_for_the_web() -> None:
    proxy, web = SERVICES["proxy"], SERVICES["web"]
    # and, in the `monitoring` profile, Prometheus's UI on this host's loopback by default
    assert [name for name, service in SERVICES.items() if "ports" in service] == [
        "proxy", "prometheus"]
    assert SERVICES["prometheus"]["ports"] == ["${PROMETHEUS_ADDRESS:-127.0.0.1:9090}:9090"]
    assert SERVICES["prometheus"]["profiles"] == ["monitoring"]
    assert re.fullmatch(r"nginx:1\.\d+-bookworm", proxy["image"])
    assert proxy["command"] == ["sh", "/etc/evalserver-proxy/start.sh"]
    assert proxy["ports"] == ["${PROXY_HTTP_ADDRESS:-127.0.0.1:8000}:80",
                              "${PROXY_HTTPS_ADDRESS:-127.0.0.1:8443}:443"]
    assert proxy["volumes"] == ["./nginx:/etc/evalserver-proxy:ro",
                                "${TLS_CERT_DIR:-./tls}:/etc/nginx/tls:ro"]
    assert os.access(DOCKER / "nginx" / "start.sh", os.X_OK)
    # the body limits are the web's settings, with the web's defaults; no outer proxy is
    # believed unless named (tests/deploy/test_proxy.py)
    assert proxy["environment"] == {
        "EVALSERVER_MAX_UPLOAD_BYTES": "${EVALSERVER_MAX_UPLOAD_BYTES:-536870912}",
        "EVALSERVER_UPLOAD_STALL_TIMEOUT": "${EVALSERVER_UPLOAD_STALL_TIMEOUT:-30}",
        "PROXY_TRUSTED_OUTER_PROXIES": "${PROXY_TRUSTED_OUTER_PROXIES:-}"}
    assert proxy["restart"] == "unless-stopped" and "env_file" not in proxy
    # only the compose network reaches the web, so any peer may be its proxy
    assert web["environment"]["EVALSERVER_TRUSTED_PROXIES"] == "0.0.0.0/0,::/0"
    # a key never goes into git nor into the image
    assert "docker/tls/" in (PROJECT_ROOT / ".gitignore").read_text().splitlines()
    assert "docker/tls" in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()


def test_every_launcher_runs_gunicorn_with_the_one_config() -> None:
    """scripts/serve.sh, the image's entrypoint, the deploy topology and the benches."""
    config = "-c evalserver/gunicorn_conf.py evalserver.wsgi"
    assert config in (PROJECT_ROOT / "scripts/serve.sh").read_text()
    assert config in (DOCKER / "entrypoint.sh").read_text()
    for path in ("tests/deploy/topology.py", "bench/leaderboard.py"):
        assert '"-c", "evalserver/gunicorn_conf.py",' in (PROJECT_ROOT / path).read_text(), path
    launchers = ["scripts/serve.sh", "docker/entrypoint.sh", "tests/deploy/topology.py",
                 "bench/leaderboard.py"]
    for path in launchers:  # the worker class and counts come from the config alone
        text = (PROJECT_ROOT / path).read_text()
        assert "--worker-class" not in text and "--threads" not in text, path


def test_the_env_example_covers_every_setting() -> None:
    example = set(_example())
    settings_variables = _settings_variables()
    table = _settings_page_tables()

    assert len(settings_variables) > 40 and {"SECRET_KEY", "SECURE_SSL_REDIRECT"} <= table
    assert settings_variables - example == set(), "add them to docker/.env.example"
    assert table - example == set(), "add them to docker/.env.example"
    assert settings_variables - table == set(), "add them to docs/operators/settings.md"
    assert example - settings_variables - table - COMPOSE_ONLY == set()
    required = {name for name, (_, commented) in _example().items() if not commented}
    assert required == {"SECRET_KEY", "ALLOWED_HOSTS", "POSTGRES_PASSWORD", "REDIS_PASSWORD"}


@pytest.mark.slow
def test_the_env_example_shows_the_true_defaults(tmp_path: Path) -> None:
    """Each commented `NAME=value` set explicitly gives the settings the defaults give."""
    shown = {name: value for name, (value, commented) in _example().items()
             if commented and name not in COMPOSE_ONLY and "$" not in value}
    names = sorted(set(shown) - {"LOG_LEVEL", "PORT", "WEB_CONCURRENCY", "WEB_THREADS",
                                 "WORKER_CONCURRENCY", "DATABASE_URL", "REDIS_URL"})
    program = ("import json, django; django.setup(); from django.conf import settings as s; "
               f"print(json.dumps({{n: str(getattr(s, n)) for n in {names!r}}}))")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SECRET_KEY": "x" * 50,
            "DJANGO_SETTINGS_MODULE": "evalserver.settings",
            "MEDIA_ROOT": "/srv/evalserver/media", "EVALSERVER_DATA_DIR": "/srv/evalserver/data"}

    def read(env: dict[str, str]) -> dict[str, str]:
        done = subprocess.run([sys.executable, "-c", program], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    assert read({**base, **{n: shown[n] for n in names}}) == read(base)


def test_the_image_installs_what_serve_sh_installs() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+) AS (\w+)$", dockerfile, flags=re.M)
    assert [name for _, name in stages] == ["build", "runtime"]
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.\d+-slim-\w+$", dockerfile, flags=re.M)
    # the same function, the same requirements file, the same torch pin
    install = "bash -c 'source scripts/lib.sh && ensure_venv requirements.txt'"
    assert install in dockerfile
    assert "\nensure_venv requirements.txt\n" in (PROJECT_ROOT / "scripts/serve.sh").read_text()
    assert "torch==" not in dockerfile and "pip install" not in dockerfile
    requirements = (PROJECT_ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in requirements
    assert 'TORCH_INDEX_URL="https://download.pytorch.org/whl/${TORCH_VARIANT}"' in dockerfile
    assert re.search(r"^ARG TORCH_VARIANT=cpu$", dockerfile, flags=re.M)
    assert "manage.py collectstatic --noinput" in dockerfile
    # the client's wheel that /client/ offers, built as serve.sh builds it (scripts/lib.sh)
    wheel = "client_wheel_build var/client"
    assert f"RUN bash -c 'source scripts/lib.sh && {wheel}'" in dockerfile
    assert f"\nif ! {wheel}; then\n" in (PROJECT_ROOT / "scripts/serve.sh").read_text()
    assert re.search(r"^USER evalserver$", dockerfile, flags=re.M)
    assert re.search(r"^HEALTHCHECK .*/healthz", dockerfile, flags=re.M | re.S)
    assert 'ENTRYPOINT ["/app/docker/entrypoint.sh"]' in dockerfile
    assert os.access(DOCKER / "entrypoint.sh", os.X_OK)


# -- every service, natively ---------------------------------------------------------------------


def _http(port: int, path: str, **headers: str) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read().decode()
    finally:
        connection.close()


def _until(check: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.5)


@pytest.fixture
def redis_with_password(tmp_path: Path) -> Iterator[tuple[int, str]]:
    password, port = secrets.token_hex(16), free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path), "--requirepass", password],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield port, password
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
def test_it_runs_every_service_natively_through_the_entrypoint(
        tmp_path: Path, data_dir: Path, redis_with_password: tuple[int, str]) -> None:
    redis_port, redis_password = redis_with_password
    web_port = free_port()
    example = {name: value for name, (value, commented) in _example().items() if not commented}
    env_file = {**example, "SECRET_KEY": secrets.token_urlsafe(50),
                "POSTGRES_PASSWORD": secrets.token_hex(16), "REDIS_PASSWORD": redis_password}
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = tmp_path / "logs"
    logs.mkdir()
    metrics_ports = {worker: free_port() for worker in WORKER_SERVICES}

    def environment(service: str) -> dict[str, str]:
        """The service's compose environment over the env_file, with local addresses."""
        composed = {name: _interpolate(str(value), env_file)
                    for name, value in SERVICES[service]["environment"].items()}
        composed["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"  # db:5432
        composed["REDIS_URL"] = composed["REDIS_URL"].replace("@redis:6379",
                                                              f"@127.0.0.1:{redis_port}")
        composed["MEDIA_ROOT"] = str(tmp_path / "media")  # the media volume
        composed["EVALSERVER_DATA_DIR"] = str(tmp_path / "data")  # the data volume
        if "EVALSERVER_METRICS_WORKER_PORT" in composed:  # each container has its own 9100
            composed["EVALSERVER_METRICS_WORKER_PORT"] = str(metrics_ports[service])
            composed["EVALSERVER_METRICS_WORKER_ADDRESS"] = "127.0.0.1"
        return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
                **env_file, **composed, "EVALSERVER_DATA_BASE_URL": mirror.url,
                "EVALSERVER_BENCHMARKS": "mnist", "BIND": f"127.0.0.1:{web_port}",
                "EVALSERVER_SWEEP_INTERVAL": "1"}

    def command(service: str) -> list[str]:  # the image's ENTRYPOINT + the service's command
        return [str(DOCKER / "entrypoint.sh"), *SERVICES[service]["command"]]

    def start(service: str) -> None:
        with (logs / f"{service}.log").open("wb") as log:
            processes[service] = subprocess.Popen(
                command(service), cwd=tmp_path, env=environment(service), stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    def log(service: str) -> str:
        return (logs / f"{service}.log").read_text(errors="replace")

    def healthy(service: str) -> bool:  # the compose healthcheck's own command
        test = SERVICES[service]["healthcheck"]["test"]
        assert test[:2] == ["CMD", "/app/docker/entrypoint.sh"]
        done = subprocess.run([str(DOCKER / "entrypoint.sh"), *test[2:]], cwd=tmp_path,
                              env=environment(service), capture_output=True, text=True,
                              timeout=60)
        return done.returncode == 0 and "pong" in done.stdout

    with data_server(data_dir) as mirror:  # served where it is, read-only: nothing copied
        try:
            init = subprocess.run(command("init"), cwd=tmp_path, env=environment("init"),
                                  capture_output=True, text=True, timeout=600)
            assert init.returncode == 0, init.stdout + init.stderr
            with sqlite3.connect(tmp_path / "db.sqlite3") as database:
                assert database.execute("SELECT slug FROM leaderboard_benchmark").fetchall() == [
                    ("mnist",)]
            assert sorted(p.name for p in (tmp_path / "data/mnist").iterdir()) == sorted(
                p.name for p in (data_dir / "mnist").iterdir())

            start("web")
            _until(lambda: _port_answers(web_port), "gunicorn listening")
            assert _http(web_port, "/healthz")[::2] == (200, '{"status": "ok"}')
            status, headers, _ = _http(web_port, "/", Host="evals.example.org")
            assert (status, headers["Location"]) == (301, "https://evals.example.org/")
            status, _, page = _http(web_port, "/", Host="evals.example.org",
                                    **{"X-Forwarded-Proto": "https"})
            assert status == 200 and "MNIST" in page

            for worker in WORKER_SERVICES:
                start(worker)
            for worker in WORKER_SERVICES:
                _until(lambda w=worker: healthy(w), f"{worker} answering its healthcheck")
            # each worker's own /metrics (the `monitoring` profile scrapes them on 9100)
            for worker in WORKER_SERVICES:
                _until(lambda w=worker: _port_answers(metrics_ports[w]), f"{worker}'s metrics")
                status, _, text = _http(metrics_ports[worker], "/metrics")
                assert status == 200
                assert "evalserver_significance_refresh_duration_seconds_count 0.0" in text

            start("beat")
            _until(lambda: "Sending due task sweep-submission-jobs" in log("beat"),
                   "beat sending the sweep")
            _until(lambda: re.search(r"leaderboard\.tasks\.cpu\.sweep_jobs\[\S+\] succeeded",
                                     log("worker-cpu")) is not None, "the cpu worker sweeping")
            _until(lambda: healthy("beat"), "beat answering its healthcheck")
        finally:
            for process in processes.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
            for name, process in processes.items():
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    pytest.fail(f"{name} did not stop on SIGTERM\n{log(name)[-2000:]}")


def _port_answers(port: int) -> bool:
    try:
        return _http(port, "/healthz")[0] > 0
    except OSError:
        return False
