#!/usr/bin/env bash
# Run the server on this machine: .venv, migrations, the benchmarks from the data directory,
# then gunicorn on 127.0.0.1:${PORT:-8000}. Settings come from the environment or .env
# (README.md, "Settings"); without SECRET_KEY a random one is kept in var/secret_key.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

ensure_venv requirements.txt
mkdir -p var

if [ -z "${SECRET_KEY:-}" ] && ! grep -qs '^SECRET_KEY=.' .env; then
    if [ ! -s var/secret_key ]; then
        (umask 077 && .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))' >var/secret_key)
    fi
    SECRET_KEY=$(cat var/secret_key)
    export SECRET_KEY
fi

echo "== Migrating the database"
.venv/bin/python manage.py migrate --noinput
echo "== Loading benchmarks"
if ! .venv/bin/python manage.py load_benchmarks; then
    echo "warning: load_benchmarks failed (see above); serving without those benchmarks" >&2
fi

PORT=${PORT:-8000}
echo
echo "Serving on http://127.0.0.1:${PORT}/  (admin: http://127.0.0.1:${PORT}/admin/;"
echo "create an account with: .venv/bin/python manage.py createsuperuser). Ctrl-C stops it."
exec .venv/bin/gunicorn evalserver.wsgi \
    --bind "127.0.0.1:${PORT}" \
    --workers "${WEB_CONCURRENCY:-2}" \
    --access-logfile - \
    --no-control-socket
