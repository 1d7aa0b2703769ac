# Shared by scripts/serve.sh and scripts/test.sh (sourced, not run).

# ensure_venv REQUIREMENTS_FILE: create .venv with python3 (or $PYTHON) if absent, and install
# the requirements file when it (or requirements.txt) changed since the last install.
ensure_venv() {
    local requirements=$1
    local python=${PYTHON:-python3}
    if [ ! -x .venv/bin/python ]; then
        echo "== Creating .venv with $("$python" --version 2>&1)"
        "$python" -m venv .venv
    fi
    local stamp=".venv/.installed-$(basename "$requirements")"
    local wanted
    wanted=$(cat "$requirements" requirements.txt | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        echo "== Installing $requirements into .venv"
        .venv/bin/python -m pip install --disable-pip-version-check --quiet -r "$requirements"
        echo "$wanted" >"$stamp"
    fi
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
