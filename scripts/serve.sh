#!/usr/bin/env bash
# Run the whole server on this machine: the missing system packages (Debian: python3-venv,
# redis-server; apt-get as root or through sudo, else a message saying what to install), .venv,
# Redis (a throwaway redis-server unless one answers at REDIS_URL), the data files (fetched
# with checksums when some are missing and their sources answer), migrations, static files, the
# benchmarks, a Celery worker (-Q cpu), a gpu-queue worker, a notify-queue worker (emails and
# webhooks), Celery beat (its own process), the
# demo submissions, then gunicorn on $BIND (127.0.0.1:${PORT:-8000} by default) in the foreground.
# A worker, beat or the throwaway Redis that stops is started again (a line here says so);
# Ctrl-C, or gunicorn stopping, stops everything it started.
# Settings come from the environment or .env (docs/operators/settings.md); without SECRET_KEY a
# random one is kept in var/secret_key. Plain http on 127.0.0.1: the https settings that
# DEBUG=false turns on are turned off here unless set. Logs: var/log/ (gunicorn's go to this
# terminal). After the first install and data fetch nothing reaches the network: every server
# binds 127.0.0.1, gunicorn too unless BIND names another address behind a proxy (below).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

# Where gunicorn listens: BIND (HOST:PORT), 127.0.0.1:$PORT by default. Loopback only unless
# BIND_BEHIND_PROXY=1 says a reverse proxy is in front: gunicorn alone, where others reach it,
# is frozen by clients trickling their headers (bind_check; docs/operators/one-machine.md,
# "Reachable from other machines"). Checked first, before anything is installed or started.
PORT=${PORT:-8000}
BIND=${BIND:-127.0.0.1:$PORT}
bind_parts=$(bind_check "$BIND") || exit $?
read -r bind_host PORT <<<"$bind_parts"
case $bind_host in  # where this script and its messages reach it
    0.0.0.0) url_host=127.0.0.1 ;;
    ::) url_host='[::1]' ;;
    *:*) url_host="[$bind_host]" ;;
    *) url_host=$bind_host ;;
esac
BASE_URL="http://$url_host:$PORT"

system_packages=()
[ -x .venv/bin/python ] || system_packages+=(python3-venv)
# A throwaway redis-server is started below unless REDIS_URL names a Redis elsewhere.
if [ -z "${REDIS_URL:-}" ] && ! grep -qs '^REDIS_URL=.' .env; then
    system_packages+=(redis-server)
fi
ensure_system_packages "${system_packages[@]}"
ensure_venv requirements.txt
LOG_DIR=var/log
mkdir -p "$LOG_DIR" var/redis

if [ -z "${SECRET_KEY:-}" ] && ! grep -qs '^SECRET_KEY=.' .env; then
    if [ ! -s var/secret_key ]; then
        (umask 077 && .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))' >var/secret_key)
    fi
    SECRET_KEY=$(cat var/secret_key)
    export SECRET_KEY
    SECRET_KEY_FILE=var/secret_key  # the printed manage.py commands read it (first_accounts_help)
fi

# Plain http, no TLS proxy in front unless these are set (docs/operators/https.md).
export SECURE_SSL_REDIRECT=${SECURE_SSL_REDIRECT:-false}
export SESSION_COOKIE_SECURE=${SESSION_COOKIE_SECURE:-false}
export CSRF_COOKIE_SECURE=${CSRF_COOKIE_SECURE:-false}
export SECURE_HSTS_SECONDS=${SECURE_HSTS_SECONDS:-0}
export SECURE_PROXY_SSL_HEADER=${SECURE_PROXY_SSL_HEADER:-false}
# No mail server is assumed on this machine: a new account's address is verified when its
# owner follows the emailed link, but logging in does not wait for it unless this is set
# (docs/operators/settings.md, "Accounts").
export EVALSERVER_EMAIL_VERIFICATION=${EVALSERVER_EMAIL_VERIFICATION:-optional}

if ! tcp_port_free "$PORT"; then
    echo "error: port $PORT is in use; set PORT (or BIND) to a free one" >&2
    exit 1
fi

REDIS_PID=""
WORKER_PID=""
BEAT_PID=""
GPU_WORKER_PID=""
NOTIFY_WORKER_PID=""
GUNICORN_PID=""

# stop PID NAME GRACE_SECONDS: SIGTERM, wait, then SIGKILL its process group.
stop() {
    local pid=$1 name=$2 grace=$3
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
        return 0
    fi
    echo "== Stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((grace * 10))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "warning: $name did not stop in ${grace} s; killing it" >&2
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop "$GUNICORN_PID" gunicorn 30
    stop "$BEAT_PID" "Celery beat" 10
    # Warm shutdown: a running task finishes; one cut short is re-run (acks late).
    stop "$WORKER_PID" "the Celery worker" 60
    stop "$GPU_WORKER_PID" "the gpu-queue Celery worker" 60
    stop "$NOTIFY_WORKER_PID" "the notify-queue Celery worker" 30
    stop "$REDIS_PID" redis-server 10
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# -- Redis ---------------------------------------------------------------------------------
# The effective REDIS_URL (environment, .env or the default), as the settings read it.
REDIS_URL=$(.venv/bin/python -c 'import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalserver.settings")
from django.conf import settings
print(settings.REDIS_URL)')
if redis_reachable "$REDIS_URL"; then
    echo "== Using the Redis at $REDIS_URL"
else
    # host, port and the rest (/db) of the URL
    read -r redis_host redis_port redis_path < <(.venv/bin/python -c 'import sys
from urllib.parse import urlparse
u = urlparse(sys.argv[1])
print(u.hostname or "127.0.0.1", u.port or 6379, u.path or "/0")' "$REDIS_URL")
    case "$redis_host" in
        127.0.0.1 | localhost | ::1) ;;
        *)
            echo "error: no Redis answers at REDIS_URL=$REDIS_URL; start it or unset REDIS_URL" >&2
            exit 1
            ;;
    esac
    if ! ensure_system_packages redis-server; then
        echo "error: no Redis answers at $REDIS_URL and redis-server is not installed" >&2
        exit 1
    fi
    if ! tcp_port_free "$redis_port"; then
        echo "warning: port $redis_port is taken by something that is not Redis; using another"
        redis_port=$(free_port)
    fi
    # Throwaway: no snapshots, no append-only file. A message lost with it is queued again
    # by the sweep (the submission rows are in the database).
    start_redis() {
        setsid redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir var/redis --logfile "$PWD/$LOG_DIR/redis.log" &
        REDIS_PID=$!
    }
    start_redis
    REDIS_URL="redis://127.0.0.1:$redis_port$redis_path"
    for _ in $(seq 100); do
        redis_reachable "$REDIS_URL" && break
        kill -0 "$REDIS_PID" 2>/dev/null || break
        sleep 0.1
    done
    if ! redis_reachable "$REDIS_URL"; then
        echo "error: redis-server did not start; see $LOG_DIR/redis.log" >&2
        exit 1
    fi
    echo "== Started redis-server at $REDIS_URL (log: $LOG_DIR/redis.log)"
fi
export REDIS_URL

# -- data files --------------------------------------------------------------------------------
# The public files the benchmarks read (data-sources.toml); fetched with checksums when some
# are missing and their sources answer, else named (the server starts without those benchmarks).
if ! data_report=$(.venv/bin/python manage.py fetch_data --check 2>&1); then
    if .venv/bin/python manage.py fetch_data --reachable >/dev/null 2>&1; then
        echo "== Fetching the missing data files (manage.py fetch_data)"
        if ! .venv/bin/python manage.py fetch_data; then
            echo "warning: fetch_data failed (see above); serving without those files" >&2
        fi
    else
        echo "$data_report" >&2
        echo "warning: the data files above are missing and their sources do not answer" \
            "(no network?); serving without the benchmarks that need them. Fetch them later" \
            "with: .venv/bin/python manage.py fetch_data (docs/operators/data.md)" >&2
    fi
fi

# -- database, static files, benchmarks -------------------------------------------------------
echo "== Migrating the database"
.venv/bin/python manage.py migrate --noinput
echo "== Collecting static files"
.venv/bin/python manage.py collectstatic --noinput -v 0
echo "== Building the client's wheel for /client/ (var/client)"
if ! client_wheel_build var/client; then
    echo "warning: the client's wheel could not be built (see above); /client/ says how to" \
        "install the client without it" >&2
fi
echo "== Loading benchmarks"
if ! .venv/bin/python manage.py load_benchmarks; then
    echo "warning: load_benchmarks failed (see above); serving without those benchmarks" >&2
fi

# -- metrics ------------------------------------------------------------------------------------
# The workers and gunicorn started from here keep their metrics in one fresh folder, so the
# web's /metrics (open to 127.0.0.1) reports them all (docs/operations-metrics.md).
metrics_dir_fresh var/metrics

# -- Celery worker ------------------------------------------------------------------------------
# Each start_* appends to its log, so that a restart keeps what the stopped process wrote.
start_worker() {
    setsid .venv/bin/celery -A evalserver worker -Q cpu \
        --concurrency "${WORKER_CONCURRENCY:-2}" --loglevel INFO \
        >>"$LOG_DIR/celery-worker.log" 2>&1 &
    WORKER_PID=$!
}
echo "== Starting a Celery worker (-Q cpu; log: $LOG_DIR/celery-worker.log)"
: >"$LOG_DIR/celery-worker.log"
start_worker
for _ in $(seq 600); do
    grep -qs ' ready\.' "$LOG_DIR/celery-worker.log" && break
    if ! kill -0 "$WORKER_PID" 2>/dev/null; then
        tail -n 30 "$LOG_DIR/celery-worker.log" >&2
        echo "error: the Celery worker stopped; see $LOG_DIR/celery-worker.log" >&2
        exit 1
    fi
    sleep 0.1
done

# The gpu queue (checkpoint runs, loss-curve audits) gets its own worker, one task at a time,
# so a long model run never holds up scoring; without a GPU it runs on the CPU.
start_gpu_worker() {
    setsid .venv/bin/celery -A evalserver worker -Q gpu --concurrency 1 --loglevel INFO \
        --hostname "gpu@%h" >>"$LOG_DIR/celery-gpu-worker.log" 2>&1 &
    GPU_WORKER_PID=$!
}
echo "== Starting a Celery worker for the gpu queue (log: $LOG_DIR/celery-gpu-worker.log)"
: >"$LOG_DIR/celery-gpu-worker.log"
start_gpu_worker

# Notifications (emails, webhook POSTs) get a worker of their own: they wait on other people's
# servers (a slow webhook receiver holds a process up to EVALSERVER_WEBHOOK_TIMEOUT a try), and
# no scoring waits behind them.
start_notify_worker() {
    setsid .venv/bin/celery -A evalserver worker -Q notify --concurrency 2 --loglevel INFO \
        --hostname "notify@%h" >>"$LOG_DIR/celery-notify-worker.log" 2>&1 &
    NOTIFY_WORKER_PID=$!
}
echo "== Starting a Celery worker for the notify queue (log: $LOG_DIR/celery-notify-worker.log)"
: >"$LOG_DIR/celery-notify-worker.log"
start_notify_worker

# Beat is its own process, never -B inside a worker: a worker killed with SIGKILL would leave
# its embedded beat child running, and the restarted worker would make a second scheduler.
start_beat() {
    # the schedule's last run times and the lock that keeps beat to one live in Redis
    setsid .venv/bin/celery -A evalserver beat --loglevel INFO >>"$LOG_DIR/celery-beat.log" 2>&1 &
    BEAT_PID=$!
}
echo "== Starting Celery beat (log: $LOG_DIR/celery-beat.log)"
: >"$LOG_DIR/celery-beat.log"
start_beat

# -- demo submissions ---------------------------------------------------------------------------
echo "== Queueing the demo submissions (scored in the background by the worker)"
if ! .venv/bin/python manage.py seed_demo; then
    echo "warning: seed_demo failed (see above); serving without the demo submissions" >&2
fi

# -- gunicorn -----------------------------------------------------------------------------------
# Its settings (threaded workers, WEB_CONCURRENCY x WEB_THREADS) are evalserver/gunicorn_conf.py,
# shared with docker/entrypoint.sh. No proxy is in front here: the application's own upload
# timeouts (EVALSERVER_UPLOAD_STALL_TIMEOUT, _DEADLINE) are what stop a slow client.
setsid .venv/bin/gunicorn -c evalserver/gunicorn_conf.py evalserver.wsgi \
    --bind "$BIND" \
    --access-logfile - &
GUNICORN_PID=$!
# The first accounts are made once the server answers (docs/operators/one-machine.md, "The
# first account, a staff user and reviewers"; docs/hosts/roles.md): a fresh database has none.
for _ in $(seq 60); do
    .venv/bin/python -c "import sys, urllib.request
try: urllib.request.urlopen('${BASE_URL}/healthz', timeout=1)
except Exception: sys.exit(1)" 2>/dev/null && break
    kill -0 "$GUNICORN_PID" 2>/dev/null || break
    sleep 0.5
done
echo
echo "Serving on ${BASE_URL}/  (admin: ${BASE_URL}/admin/)."
first_accounts_help "$BASE_URL"
echo "Logs: gunicorn here; workers $LOG_DIR/celery-worker.log, $LOG_DIR/celery-gpu-worker.log," \
    "$LOG_DIR/celery-notify-worker.log;" \
    "beat $LOG_DIR/celery-beat.log${REDIS_PID:+; Redis $LOG_DIR/redis.log}."
echo "Ctrl-C stops everything."

# -- supervision --------------------------------------------------------------------------------
# Checked every second (`wait -n` alone can miss a process that stops while another is being
# restarted). restart_if_stopped PID_VARIABLE NAME START_FUNCTION LOG: when the process in
# $PID_VARIABLE has stopped, say so and start it again, after 5 s when it ran less than 10 s, so
# that one that cannot start does not spin.
declare -A started_at=([REDIS_PID]=$SECONDS [WORKER_PID]=$SECONDS [GPU_WORKER_PID]=$SECONDS
    [NOTIFY_WORKER_PID]=$SECONDS [BEAT_PID]=$SECONDS)
restart_if_stopped() {
    local variable=$1 name=$2 start=$3 log=$4 status
    [ -n "${!variable}" ] || return 0
    kill -0 "${!variable}" 2>/dev/null && return 0
    wait "${!variable}"
    status=$?
    echo "warning: $name stopped (status $status); starting it again (log: $log)" >&2
    if [ $((SECONDS - started_at[$variable])) -lt 10 ]; then
        sleep 5
    fi
    started_at[$variable]=$SECONDS
    "$start"
    echo "== $name started again (pid ${!variable})" >&2
}
# Returns when gunicorn stops (or on Ctrl-C): then everything is stopped.
set +e
while sleep 1; do
    if ! kill -0 "$GUNICORN_PID" 2>/dev/null; then
        wait "$GUNICORN_PID"
        echo "gunicorn stopped (status $?)" >&2
        exit 1
    fi
    restart_if_stopped REDIS_PID redis-server start_redis "$LOG_DIR/redis.log"
    restart_if_stopped WORKER_PID "the Celery worker" start_worker "$LOG_DIR/celery-worker.log"
    restart_if_stopped GPU_WORKER_PID "the gpu-queue worker" start_gpu_worker \
        "$LOG_DIR/celery-gpu-worker.log"
    restart_if_stopped NOTIFY_WORKER_PID "the notify-queue worker" start_notify_worker \
        "$LOG_DIR/celery-notify-worker.log"
    restart_if_stopped BEAT_PID "Celery beat" start_beat "$LOG_DIR/celery-beat.log"
done
exit 1
