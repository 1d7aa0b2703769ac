#!/usr/bin/env bash
# Run every check: ruff, mypy, the import contracts, migrations up to date, then every test on a
# throwaway PostgreSQL cluster (the production database) with the quick benches beside them (two
# lanes: those of the namespace topology, then the SQLite-specific tests and the path of
# scripts/serve.sh's defaults on SQLite (`-m sqlite`); and those of one process). The tests run
# in PYTEST_WORKERS processes (pytest-xdist; default: one per core and one more), each with a
# database and a Redis database of its own. Without PostgreSQL every test runs on SQLite.
# First installs the missing system packages (Debian: python3-venv, redis-server, postgresql,
# chromium for the browser tests, wrk for the benches, nginx-light and openssl for the proxy's
# tests, prometheus for its promtool (the alert rules' checks); apt-get as root or through
# sudo, else it stops with a message saying what to install).
# Under CI=true no test may skip for want of one.
# Uses REDIS_URL when a Redis answers there, else starts a throwaway redis-server.
# Extra arguments go to both pytest runs (e.g. `bash scripts/test.sh -k celery -x`).
# PYTEST_WORKERS=1 runs the tests in one process (no xdist), as a debugger wants.
# Exits non-zero if any step failed; stops everything it started on exit.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
# Each module compiled once and its .pyc kept: an environment that forbids writing them
# (PYTHONDONTWRITEBYTECODE, set in many container images) makes every one of the hundreds of
# Python processes the tests start (workers, gunicorn, manage.py) compile each module it
# imports anew, the venv's libraries included (installed without their .pyc, below), and
# pytest rewrite every test module's asserts in each process.
unset PYTHONDONTWRITEBYTECODE

system_packages=(postgresql chromium wrk nginx-light openssl prometheus)
[ -x .venv/bin/python ] || system_packages+=(python3-venv)
[ -n "${REDIS_URL:-}" ] || system_packages+=(redis-server)
ensure_system_packages "${system_packages[@]}" || exit 1
VENV_NO_COMPILE=1 ensure_venv requirements-dev.txt || exit 1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/evalserver-test.XXXXXX")
REDIS_PID=""
PG_CTL=()

LANE_PIDS=()
cleanup() {
    local pid
    for pid in "${LANE_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            # SIGINT: a bench's finally blocks take its topology down
            kill -INT -- "-$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
    done
    if [ -n "$REDIS_PID" ]; then
        kill "$REDIS_PID" 2>/dev/null
        wait "$REDIS_PID" 2>/dev/null
    fi
    if [ ${#PG_CTL[@]} -gt 0 ]; then
        "${PG_CTL[@]}" stop -m fast >/dev/null 2>&1
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failed=()
# children_cpu VAR FILE: VAR = the CPU seconds (user + system) of every process this shell has
# waited for, with theirs (`times`, run in this shell: a subshell would count its own); a
# step's share is the difference across it. CI's machine is CPU-bound (two cores for the tests
# and both lanes), so this is what a step costs the others.
children_cpu() {
    times >"$2"
    printf -v "$1" '%s' "$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) {
        split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%d", t }' "$2")"
}
# step NAME COMMAND...: run one check, say how long it took, remember it if it failed.
step() {
    local name=$1 started=$SECONDS cpu cpu_after
    children_cpu cpu "$WORK/times"
    shift
    echo
    echo "== $name"
    if ! "$@"; then
        failed+=("$name")
    fi
    children_cpu cpu_after "$WORK/times"
    echo "-- $name: took $((SECONDS - started)) s (CPU $((cpu_after - cpu)) s)"
}

# The benches that build the namespace topology (tests/deploy/topology.py) spend most of their
# time waiting (for the sweep's window, a restart, a drain), so they run one after the other in
# the background, beside the tests, each into its own log; their quick runs judge counts only,
# never timing (bench/README.md), so the load of the tests beside them changes no verdict.
# background_steps NAME COMMAND [NAME COMMAND ...]: start a lane that runs them one after the
# other (each COMMAND one string); several lanes run at once.
# background_steps_wait: wait for every lane, then print each step's log like a step and record
# failures.
BACKGROUND=()
background_steps() {
    local script i=${#BACKGROUND[@]}
    script="$(declare -f children_cpu);"
    while [ $# -gt 0 ]; do
        BACKGROUND+=("$1")
        script+="started=\$SECONDS; children_cpu cpu '$WORK/times-$i';"
        script+=" ($2) >'$WORK/background-$i.log' 2>&1;"
        script+=" echo \$? >'$WORK/background-$i.status'; children_cpu after '$WORK/times-$i';"
        script+=" echo \"\$((SECONDS - started)) s (CPU \$((after - cpu)) s)\""
        script+=" >'$WORK/background-$i.seconds';"
        i=$((i + 1))
        shift 2
    done
    # its own process group, so that cleanup can interrupt every bench in it
    setsid bash -c "$script" &
    LANE_PIDS+=($!)
}
background_steps_wait() {
    local i name status pid
    [ ${#BACKGROUND[@]} -gt 0 ] || return 0
    for pid in "${LANE_PIDS[@]}"; do
        wait "$pid"
    done
    for i in "${!BACKGROUND[@]}"; do
        name=${BACKGROUND[$i]}
        echo
        echo "== $name (beside the tests)"
        cat "$WORK/background-$i.log" 2>/dev/null
        status=$(cat "$WORK/background-$i.status" 2>/dev/null || echo 1)
        [ "$status" = 0 ] || failed+=("$name")
        echo "-- $name: took $(cat "$WORK/background-$i.seconds" 2>/dev/null || echo '? s')"
    done
}

# -- Redis ---------------------------------------------------------------------------------------
if [ -n "${REDIS_URL:-}" ] && redis_reachable "$REDIS_URL"; then
    echo "== Using Redis at $REDIS_URL"
else
    [ -n "${REDIS_URL:-}" ] && echo "warning: no Redis answers at REDIS_URL=$REDIS_URL; starting one"
    if command -v redis-server >/dev/null; then
        port=$(free_port)
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$WORK" --logfile "$WORK/redis.log" &
        REDIS_PID=$!
        export REDIS_URL="redis://127.0.0.1:$port/0"
        for _ in $(seq 50); do redis_reachable "$REDIS_URL" && break; sleep 0.1; done
        echo "== Started a throwaway redis-server at $REDIS_URL"
    else
        echo "warning: redis-server is not installed (apt-get install redis-server);" \
            "the Celery test will start none and fail"
        unset REDIS_URL
    fi
fi

# -- checks: a lane of their own, beside the client's build and the tests --------------------------
export DJANGO_SETTINGS_MODULE=evalserver.settings_testing
background_steps \
    "ruff check" ".venv/bin/ruff check ." \
    "mypy" ".venv/bin/mypy" \
    "import contracts" ".venv/bin/lint-imports" \
    "migrations up to date" "env -u DATABASE_URL .venv/bin/python manage.py makemigrations --check --dry-run"

# The client package (clients/python) as researchers get it: a wheel and an sdist built with
# `python -m build`, and the wheels of its dependencies, for tests/clients/test_package.py's
# offline install into a fresh venv (EVALSERVER_CLIENT_DIST). The network is needed here only.
build_client() {
    local dist="$WORK/client-dist"
    .venv/bin/python -m build clients/python --outdir "$dist" >"$WORK/client-build.log" 2>&1 \
        || { tail -n 40 "$WORK/client-build.log"; return 1; }
    rm -rf clients/python/*.egg-info  # the sdist's metadata, written into the source
    .venv/bin/python -m pip download --disable-pip-version-check --quiet --only-binary=:all: \
        --dest "$dist/deps" "$dist"/evalserver_client-*.whl || return 1
    ls "$dist" "$dist/deps"
    export EVALSERVER_CLIENT_DIST="$dist"
}
step "client package: wheel, sdist and its dependencies" build_client


# pytest-xdist: one process per core and one more unless PYTEST_WORKERS says otherwise (many
# tests wait on processes they start: workers, servers, a browser, a namespace topology; the
# extra process keeps the cores busy meanwhile: on two cores, 810 s against 963 s with two);
# each test module runs whole in one process (--dist loadfile: a module's fixtures and its
# Redis database numbers stay in one place).
workers=${PYTEST_WORKERS:-$(($(nproc 2>/dev/null || echo 2) + 1))}
[ -n "${PYTEST_WORKERS:-}" ] || [ "$workers" -le 8 ] || workers=8
if [ "$workers" -gt 1 ]; then
    PYTEST=(.venv/bin/python -m pytest -n "$workers" --dist loadfile)
    SQLITE_PYTEST=(.venv/bin/python -m pytest -n 2 --dist loadfile)
else
    PYTEST=(.venv/bin/python -m pytest -p no:xdist)
    SQLITE_PYTEST=("${PYTEST[@]}")
fi
# Redis databases (the URL's number plus): the test processes take 0 .. workers - 1 (one
# each, evalserver/settings_testing.py), the SQLite tests' the next two, the benches of one
# process the one after; 11-14 are a few test modules' own (tests/conftest.py,
# redis_database_empty).
redis_database() {
    .venv/bin/python -c 'import sys, urllib.parse as u
url = u.urlsplit(sys.argv[1])
number = int(url.path.strip("/") or 0) + int(sys.argv[2])
print(u.urlunsplit(url._replace(path=f"/{number}")))' "${REDIS_URL:-redis://127.0.0.1:6379/0}" "$1"
}

# -- PostgreSQL ------------------------------------------------------------------------------------
start_postgres() {
    local initdb=$1 bin pgdata="$WORK/pg/data" port as_postgres=()
    bin=$(dirname "$initdb")
    mkdir -p "$WORK/pg"
    if [ "$(id -u)" -eq 0 ]; then
        # PostgreSQL refuses to run as root: run it as the postgres user.
        if ! id postgres >/dev/null 2>&1; then
            echo "no 'postgres' user to run PostgreSQL as (we are root)" >&2
            return 1
        fi
        chmod 755 "$WORK"
        chown postgres: "$WORK/pg"
        if command -v runuser >/dev/null; then
            as_postgres=(runuser -u postgres --)
        else
            as_postgres=(su postgres -s /bin/sh -c '"$0" "$@"')
        fi
    fi
    port=$(free_port)
    "${as_postgres[@]}" "$bin/initdb" -D "$pgdata" -U postgres -A trust -E UTF8 --no-sync \
        >"$WORK/pg/initdb.log" 2>&1 || { cat "$WORK/pg/initdb.log" >&2; return 1; }
    PG_CTL=("${as_postgres[@]}" "$bin/pg_ctl" -D "$pgdata")
    "${PG_CTL[@]}" -l "$WORK/pg/server.log" -w -t 60 \
        -o "-p $port -k $WORK/pg -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
        start >/dev/null || { cat "$WORK/pg/server.log" >&2; return 1; }
    "${as_postgres[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres evalserver || return 1
    PG_URL="postgres://postgres@127.0.0.1:$port/evalserver"
    echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') at $PG_URL"
}

initdb=$(ls -1 /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)
if [ -n "$initdb" ]; then
    step "start a throwaway PostgreSQL" start_postgres "$initdb"
fi
# After them in their lane, with PostgreSQL: the SQLite-specific tests and scripts/serve.sh's
# path (`-m sqlite`), beside the tests on PostgreSQL rather than after them. pytest exits 5 when
# no test is selected (a -k that matches no SQLite-specific test).
sqlite_lane=()
if [ -n "${PG_URL:-}" ]; then
    sqlite_lane=("pytest (SQLite: the SQLite-specific tests and scripts/serve.sh's path)"
                 "env -u DATABASE_URL REDIS_URL=$(redis_database "$workers")$(printf ' %q' \
                 "${SQLITE_PYTEST[@]}" -m sqlite "$@"); s=\$?; [ \$s -eq 5 ] && s=0; exit \$s")
fi
background_steps \
    "benchmarks: multi-host cluster, shared disk and S3 (quick)" ".venv/bin/python bench/cluster.py --quick --s3" \
    "benchmarks: faults (quick)" ".venv/bin/python bench/faults.py --quick" \
    "benchmarks: chaos soak (quick)" ".venv/bin/python bench/chaos.py --quick" \
    "${sqlite_lane[@]}"
# The benches of one process, in a second lane beside the tests: their quick runs judge counts
# and budgets (queries, files opened per submission), never timing, so the tests' load changes
# no verdict; their timings here are smoke, not figures (bench/README.md). The re-scoring bench
# runs at its "mid" size only (its guard; the quick run takes the same path).
bench_redis=$(redis_database $((workers + 2)))
# The first bench to migrate a database leaves it in bench-migrated for the others to copy
# (bench/leaderboard.py, database_migrated): they run the same code one after the other.
bench_env="REDIS_URL=$bench_redis EVALSERVER_BENCH_MIGRATED=$WORK/bench-migrated"
background_steps \
    "benchmarks: scoring (quick)" "$bench_env .venv/bin/python bench/score.py --quick" \
    "benchmarks: bundles, compiled and added to a fresh database (quick)" "$bench_env .venv/bin/python bench/bundle.py --quick" \
    "benchmarks: leaderboard under load (quick)" "$bench_env .venv/bin/python bench/leaderboard.py --quick" \
    "benchmarks: leaderboard while two uploads trickle (quick)" "$bench_env .venv/bin/python bench/slow_uploads.py --quick" \
    "benchmarks: significance (rank_ub) after a scoring and in full (quick)" "$bench_env .venv/bin/python bench/significance.py --quick" \
    "benchmarks: re-scoring's per-submission budgets at 2,000 submissions (mid)" "$bench_env .venv/bin/python bench/rescore.py --mid" \
    "benchmarks: most confused classes of the about page (quick)" "$bench_env .venv/bin/python bench/confusions.py --quick" \
    "benchmarks: comparing two submissions (quick)" "$bench_env .venv/bin/python bench/compare.py --quick" \
    "benchmarks: the API's rate limits, per request and under a burst (quick)" "$bench_env .venv/bin/python bench/throttles.py --quick" \
    "benchmarks: checkpoint inference (quick)" "$bench_env .venv/bin/python bench/checkpoint.py --quick" \
    "benchmarks: label audits (quick)" "$bench_env .venv/bin/python bench/audit.py --quick" \
    "benchmarks: boosting attack on a hidden label set (quick)" "$bench_env .venv/bin/python bench/ladder.py --quick"
if [ -n "${PG_URL:-}" ]; then
    # --durations: the slowest tests named in every CI log, to keep them cheap
    step "pytest (PostgreSQL: every test)" env DATABASE_URL="$PG_URL" "${PYTEST[@]}" \
        --durations=30 "$@"
    background_steps_wait
else
    [ -z "$initdb" ] && echo && echo "== PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): every test on SQLite"
    step "pytest (SQLite: every test)" env -u DATABASE_URL "${PYTEST[@]}" "$@"
    background_steps_wait
fi

echo
echo "== $SECONDS s in all"
if [ ${#failed[@]} -gt 0 ]; then
    printf 'FAILED: %s\n' "${failed[@]}"
    exit 1
fi
echo "All checks passed."
