#!/usr/bin/env bash
# Every process of docker/compose.yaml starts here, in the image or natively from a checkout
# (then with .venv/bin first on PATH). Settings come from the environment
# (docs/operators/settings.md; docker/.env.example lists them).
#
#   init        migrate, fetch the missing data files (fetch_data), load the benchmarks; one-shot
#   web         gunicorn on ${BIND:-0.0.0.0:${PORT:-8000}} with evalserver/gunicorn_conf.py
#               (${WEB_CONCURRENCY:-2} workers of ${WEB_THREADS:-4} threads)
#   worker-cpu  celery worker -Q cpu, ${WORKER_CONCURRENCY:-2} processes, named cpu@<host>
#   worker-gpu  celery worker -Q gpu, one process, named gpu@<host>
#   worker-notify  celery worker -Q notify (emails, webhook POSTs), two processes, named
#               notify@<host>
#   beat        celery beat: one sends the scheduled tasks, the one holding the lock in Redis
#   ping ROLE   succeed when this host's worker of that role (worker-cpu, -gpu, -notify) answers;
#               `ping beat`: when a beat holds the lock (evalserver/beat.py)
#   anything else is run as given (e.g. `python manage.py createsuperuser`)
#
# EVALSERVER_BENCHMARKS (space-separated slugs) limits init to those benchmarks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -x .venv/bin/python ]; then
    PATH="$PWD/.venv/bin:$PATH"
fi
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-evalserver.settings}

# Prometheus metrics (docs/operations-metrics.md): web and workers keep theirs in a folder
# emptied at each start (prometheus_client's multiprocess mode); every other role (init, ping,
# a one-off manage.py) keeps none, so that no healthcheck leaves a file there every minute.
METRICS_DIR=${PROMETHEUS_MULTIPROC_DIR:-/tmp/evalserver-metrics}
unset PROMETHEUS_MULTIPROC_DIR
metrics_dir_fresh() {
    mkdir -p "$METRICS_DIR"
    find "$METRICS_DIR" -maxdepth 1 -type f -name '*.db' -delete
    export PROMETHEUS_MULTIPROC_DIR=$METRICS_DIR
}

role=${1:-web}
[ $# -gt 0 ] && shift
fetch_only=() load_only=()
for slug in ${EVALSERVER_BENCHMARKS:-}; do
    fetch_only+=("$slug")
    load_only+=("--benchmark=$slug")
done
[ ${#fetch_only[@]} -eq 0 ] || fetch_only=(--only "${fetch_only[@]}")

case $role in
    init)
        python manage.py migrate --noinput
        python manage.py fetch_data --no-progress "${fetch_only[@]}"
        exec python manage.py load_benchmarks "${load_only[@]}"
        ;;
    web)
        metrics_dir_fresh
        exec gunicorn -c evalserver/gunicorn_conf.py evalserver.wsgi \
            --bind "${BIND:-0.0.0.0:${PORT:-8000}}" --access-logfile - "$@"
        ;;
    worker-cpu)
        metrics_dir_fresh
        exec celery -A evalserver worker -Q cpu --concurrency "${WORKER_CONCURRENCY:-2}" \
            --hostname "cpu@%h" --loglevel "${LOG_LEVEL:-INFO}" "$@"
        ;;
    worker-gpu)
        metrics_dir_fresh
        exec celery -A evalserver worker -Q gpu --concurrency 1 --hostname "gpu@%h" \
            --loglevel "${LOG_LEVEL:-INFO}" "$@"
        ;;
    worker-notify)
        metrics_dir_fresh
        exec celery -A evalserver worker -Q notify --concurrency 2 --hostname "notify@%h" \
            --loglevel "${LOG_LEVEL:-INFO}" "$@"
        ;;
    beat)
        # the schedule's last run times and the lock live in Redis (evalserver/settings/jobs.py, "Beat")
        exec celery -A evalserver beat --loglevel "${LOG_LEVEL:-INFO}" "$@"
        ;;
    ping)
        case ${1:-} in
            worker-cpu) name=cpu ;;
            worker-gpu) name=gpu ;;
            worker-notify) name=notify ;;
            beat) exec python -c 'from evalserver.beat import ping; raise SystemExit(ping())' ;;
            *) echo "usage: entrypoint.sh ping worker-cpu|worker-gpu|worker-notify|beat" >&2
               exit 2 ;;
        esac
        exec celery -A evalserver inspect ping --destination "$name@$HOSTNAME" --timeout 10
        ;;
    *)
        exec "$role" "$@"
        ;;
esac
