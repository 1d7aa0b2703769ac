# Shared by scripts/serve.sh and scripts/test.sh (sourced, not run).

# system_package_missing PACKAGE: succeed when what this Debian package provides is absent.
system_package_missing() {
    case $1 in
        redis-server) ! command -v redis-server >/dev/null ;;
        postgresql) ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null ;;
        # the browser tests drive Debian's chromium through Playwright (no browser download)
        chromium) [ ! -x /usr/bin/chromium ] ;;
        # bench/leaderboard.py sends its load with wrk (else a slower Python client)
        wrk) ! command -v wrk >/dev/null ;;
        # tests/deploy/test_proxy.py runs compose's proxy site with Debian's nginx (in /usr/sbin,
        # which a user's PATH may lack), and makes its test certificate with openssl
        nginx-light) [ ! -x /usr/sbin/nginx ] && ! command -v nginx >/dev/null ;;
        openssl) ! command -v openssl >/dev/null ;;
        # tests/deploy/test_metrics_rules.py checks docker/prometheus/alerts.yml with its promtool
        prometheus) ! command -v promtool >/dev/null ;;
        # `python3 -m venv` needs ensurepip, which Debian ships apart
        python3-venv) ! "${PYTHON:-python3}" -c 'import ensurepip, venv' 2>/dev/null ;;
        *)
            echo "error: system_package_missing: unknown package $1" >&2
            return 2
            ;;
    esac
}

# ensure_system_packages PACKAGE...: install those of the Debian packages (redis-server,
# postgresql, chromium, wrk, nginx-light, openssl, prometheus, python3-venv) that are missing: with apt-get as root, else with
# sudo when there is one that may ask; otherwise stop with one message naming the packages
# and the command that installs them.
ensure_system_packages() {
    local missing=() package
    for package in "$@"; do
        if system_package_missing "$package"; then
            missing+=("$package")
        elif [ $? -eq 2 ]; then
            return 2
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local install=(apt-get install -y -q --no-install-recommends "${missing[@]}")
    local runner=() sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo "
        # sudo without a password, or one that can ask on this terminal
        if command -v sudo >/dev/null && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
            runner=(sudo)
        else
            runner=(none)
        fi
    fi
    local how="    ${sudo}apt-get update && ${sudo}${install[*]}"
    if [ "${runner[*]}" = none ] || ! command -v apt-get >/dev/null; then
        echo "error: missing system packages: ${missing[*]}. Install them, then run this again:" >&2
        echo "$how" >&2
        return 1
    fi
    echo "== Installing the missing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! { "${runner[@]}" apt-get update -q && "${runner[@]}" "${install[@]}"; }; then
        echo "error: could not install ${missing[*]}. Install them, then run this again:" >&2
        echo "$how" >&2
        return 1
    fi
    for package in "${missing[@]}"; do
        if system_package_missing "$package"; then
            echo "error: $package is still missing after installing it" >&2
            return 1
        fi
    done
}

# metrics_dir_fresh DIR: make DIR the empty folder where this start's processes keep their
# Prometheus metrics (prometheus_client's multiprocess mode: evalserver/metrics_endpoint.py), and export
# it as PROMETHEUS_MULTIPROC_DIR. Only the files prometheus_client writes (*.db) are removed:
# those of a previous start would be added to this one's. docker/entrypoint.sh does the same.
metrics_dir_fresh() {
    mkdir -p "$1"
    find "$1" -maxdepth 1 -type f -name '*.db' -delete
    PROMETHEUS_MULTIPROC_DIR=$(cd "$1" && pwd)
    export PROMETHEUS_MULTIPROC_DIR
}

# ensure_venv REQUIREMENTS_FILE: create .venv with python3 (or $PYTHON) if absent, and install
# the requirements file when it (or requirements.txt, or the two variables below) changed since
# the last install. docker/Dockerfile installs with this same function.
#   TORCH_INDEX_URL  a wheel index for requirements.txt's torch pin, installed first: e.g.
#                    https://download.pytorch.org/whl/cpu (CPU only, the image's default) or
#                    .../whl/cu128 (CUDA); unset: torch comes from the package index as the rest
#   ONNXRUNTIME_GPU  1: onnxruntime-gpu of requirements.txt's onnxruntime version in its place
#   VENV_NO_COMPILE  1: no .pyc written at install (pip --no-compile): each module is compiled
#                    when first imported, so only the imported ones are (scripts/test.sh, where
#                    a fresh machine installs every time); the image compiles them all
ensure_venv() {
    local requirements=$1
    local python=${PYTHON:-python3}
    if [ ! -x .venv/bin/python ]; then
        echo "== Creating .venv with $("$python" --version 2>&1)"
        "$python" -m venv .venv
    fi
    local stamp=".venv/.installed-$(basename "$requirements")"
    local wanted
    wanted=$({ cat "$requirements" requirements.txt
               echo "${TORCH_INDEX_URL:-}" "${ONNXRUNTIME_GPU:-}"; } | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        local pip=(.venv/bin/python -m pip install --disable-pip-version-check --quiet)
        [ "${VENV_NO_COMPILE:-}" = 1 ] && pip+=(--no-compile)
        if [ -n "${TORCH_INDEX_URL:-}" ]; then
            echo "== Installing $(grep -E '^torch==' requirements.txt) from $TORCH_INDEX_URL"
            "${pip[@]}" --index-url "$TORCH_INDEX_URL" "$(grep -E '^torch==' requirements.txt)"
        fi
        echo "== Installing $requirements into .venv"
        "${pip[@]}" -r "$requirements"
        if [ "${ONNXRUNTIME_GPU:-}" = 1 ]; then
            local version
            version=$(sed -n 's/^onnxruntime==//p' requirements.txt)
            echo "== Replacing onnxruntime by onnxruntime-gpu==$version"
            .venv/bin/python -m pip uninstall --disable-pip-version-check --quiet -y onnxruntime
            "${pip[@]}" "onnxruntime-gpu==$version"
        fi
        echo "$wanted" >"$stamp"
    fi
}

# client_wheel_build FOLDER: the client's wheel (clients/python) built from this checkout into
# FOLDER, replacing the one there: what the server's /client/ page offers for download
# (EVALSERVER_CLIENT_WHEEL_DIR, var/client). Built from a copy (a build writes into its source)
# by .venv's setuptools, without the network, when it builds wheels by itself (70.1 or later:
# torch's dependency brings one); else pip fetches a build backend. Fails with pip's words.
client_wheel_build() {
    local folder=$1 work isolation=(--no-build-isolation)
    work=$(mktemp -d)
    cp -r clients/python "$work/src"
    rm -rf "$work/src/build" "$work"/src/*.egg-info
    .venv/bin/python -c 'import setuptools, sys
sys.exit(tuple(int(p) for p in setuptools.__version__.split(".")[:2]) < (70, 1))' 2>/dev/null \
        || isolation=()
    if ! .venv/bin/python -m pip wheel --disable-pip-version-check --quiet --no-deps \
            "${isolation[@]}" --wheel-dir "$work/dist" "$work/src" >"$work/log" 2>&1; then
        cat "$work/log" >&2
        rm -rf "$work"
        return 1
    fi
    mkdir -p "$folder"
    rm -f "$folder"/evalserver_client-*.whl
    mv "$work"/dist/evalserver_client-*.whl "$folder"/
    rm -rf "$work"
}

# first_accounts_help BASE_URL: how to make the first accounts, as serve.sh prints it once the
# server answers: commands to run as printed in another terminal from the checkout. When
# serve.sh keeps the key in var/secret_key (SECRET_KEY_FILE set: none in the environment or
# .env), that shell lacks it and settings refuse to load without one, so each command reads it.
first_accounts_help() {
    local manage=".venv/bin/python manage.py"
    [ -n "${SECRET_KEY_FILE:-}" ] && manage="SECRET_KEY=\"\$(cat $SECRET_KEY_FILE)\" $manage"
    echo "The first accounts, in another terminal from $(pwd):"
    echo "  $manage createsuperuser        # you: every right, and the admin pages"
    echo "  anyone signs up on $1/signup/ (a participant; token on /profile/)"
    echo "  $manage role grant --username NAME --role reviewer   # reviews labels"
    echo "  $manage role grant --username NAME --role host       # hosts benchmarks"
    echo "  (the site team's roles; what each may do: docs/hosts/roles.md)"
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
    .venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# redis_reachable URL: succeed when a Redis server answers PING at URL.
redis_reachable() {
    .venv/bin/python -c 'import sys, redis; redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1).ping()' "$1" >/dev/null 2>&1
}

# tcp_port_free PORT: succeed when nothing listens on 127.0.0.1:PORT.
tcp_port_free() {
    .venv/bin/python -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()' "$1"
}

# bind_check BIND: where gunicorn may listen, printed as "HOST PORT". BIND is HOST:PORT as
# gunicorn's --bind takes it (an IPv6 address in brackets: [::1]:8000). Loopback only
# (127.0.0.0/8, ::1, localhost) unless BIND_BEHIND_PROXY says a reverse proxy is in front:
# gunicorn has no timeout for a request's headers, so on an address others can reach a few
# clients sending theirs a byte at a time hold every thread (16 left /healthz unanswered;
# docs/operators/one-machine.md, "Reachable from other machines"). A refusal, or a value it
# cannot read: one error line, status 2. Bash alone (serve.sh calls it before anything else).
bind_check() {
    local bind=$1 host port octet loopback=false behind=${BIND_BEHIND_PROXY:-}
    local bracketed='^\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})$' named='^([^]:/[]+):([0-9]{1,5})$'
    if [[ $bind =~ $bracketed || $bind =~ $named ]]; then
        host=${BASH_REMATCH[1]}
        port=$((10#${BASH_REMATCH[2]}))
    fi
    if [ -z "${host:-}" ] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
        echo "error: BIND=$bind is not valid: expected HOST:PORT (a port from 1 to 65535;" \
            "an IPv6 address in brackets, as [::1]:8000)" >&2
        return 2
    fi
    case ${behind,,} in
        1 | true | yes | on) behind=true ;;
        0 | false | no | off | '') behind=false ;;
        *)
            echo "error: BIND_BEHIND_PROXY=$behind is not valid: expected one of 0, 1, false," \
                "no, off, on, true, yes" >&2
            return 2
            ;;
    esac
    if [ "$host" = localhost ] || [ "$host" = ::1 ]; then
        loopback=true
    elif [[ $host =~ ^127\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]]; then
        loopback=true
        for octet in "${BASH_REMATCH[@]:1}"; do
            [ $((10#$octet)) -le 255 ] || loopback=false
        done
    fi
    if [ "$loopback" = false ] && [ "$behind" = false ]; then
        echo "error: BIND=$bind is not a loopback address: gunicorn alone must not listen where" \
            "others can reach it (a client sending its headers a byte at a time holds one of" \
            "its threads for as long as it likes, and a few such clients leave every request" \
            "unanswered). Put a reverse proxy in front that reads whole requests first" \
            "(docs/operators/one-machine.md, \"Reachable from other machines\"), or bind" \
            "127.0.0.1; where only that proxy reaches this address, set BIND_BEHIND_PROXY=1." >&2
        return 2
    fi
    echo "$host $port"
}
