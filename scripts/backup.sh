#!/usr/bin/env bash
# Back up, or restore, the server's database and its stored files (docs/operators/backup.md).
#
#   bash scripts/backup.sh backup DEST     a new folder DEST/evalserver-backup-<UTC time>/ with
#                                          the database, a tar of the stored files and a
#                                          manifest; prints its path
#   bash scripts/backup.sh restore FOLDER  checks FOLDER's manifest, then puts the database and
#                                          the stored files back (stop the server first)
#
# Reads the server's own settings (evalserver/settings/, with DJANGO_SETTINGS_MODULE and the
# environment or .env the server runs with): DATABASE_URL, MEDIA_ROOT, EVALSERVER_CACHE_DIR and
# EVALSERVER_STORAGE_BACKEND. PostgreSQL is dumped with pg_dump --format=custom and restored
# with pg_restore --clean --if-exists --no-owner (PG_BIN: the folder of pg_dump and pg_restore,
# which must be of the server's major version or newer; default: those on PATH); SQLite with
# its online backup API. The stored files are tarred from the file-system storage's folder,
# without the cache of compiled label sets (EVALSERVER_CACHE_DIR: rebuilt when missing); with
# files in an object store (S3) the bucket is not in the backup: the store's own versioning or
# replication keeps it. The database is dumped first, then the files, so that every row's file
# is in the backup (a file is stored before its row commits); a file stored between the two is
# an orphan, harmless. Redis (the broker's queues, beat's lock, login counts) is not backed up.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-.venv/bin/python}
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-evalserver.settings}

usage() {
    echo "usage: bash scripts/backup.sh backup DEST | restore FOLDER" >&2
    exit 2
}
die() {
    echo "backup.sh: $*" >&2
    exit 1
}

# Sets DB_KIND (postgresql|sqlite), SQLITE_PATH, PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE/
# PGSSLMODE (exported: libpq reads them, so no password is on a command line), FILES_DIR (the
# file-system storage's folder; empty with any other storage), STORAGE_BACKEND and CACHE_DIR,
# from the settings the server runs with.
read_settings() {
    local assignments
    assignments=$("$PYTHON" - <<'EOF'
import shlex

import django
from django.conf import settings

django.setup()
db = settings.DATABASES["default"]
out = {"STORAGE_BACKEND": settings.STORAGES["default"]["BACKEND"],
       "CACHE_DIR": str(settings.EVALSERVER_CACHE_DIR.resolve())}
if db["ENGINE"] == "django.db.backends.sqlite3":
    out.update(DB_KIND="sqlite", SQLITE_PATH=str(db["NAME"]))
elif db["ENGINE"] == "django.db.backends.postgresql":
    out.update(DB_KIND="postgresql", PGHOST=db.get("HOST") or "", PGPORT=str(db.get("PORT") or ""),
               PGUSER=db.get("USER") or "", PGPASSWORD=db.get("PASSWORD") or "",
               PGDATABASE=db["NAME"], PGSSLMODE=db.get("OPTIONS", {}).get("sslmode", ""))
else:
    raise SystemExit(f"backup.sh: no backup for the database engine {db['ENGINE']}")
if out["STORAGE_BACKEND"] == "django.core.files.storage.FileSystemStorage":
    location = settings.STORAGES["default"].get("OPTIONS", {}).get("location")
    out["FILES_DIR"] = str(__import__("pathlib").Path(location or settings.MEDIA_ROOT).resolve())
else:
    out["FILES_DIR"] = ""
for name, value in out.items():
    print(f"{name}={shlex.quote(value)}")
EOF
) || die "could not read the server's settings ($DJANGO_SETTINGS_MODULE)"
    eval "$assignments"
    local name
    for name in PGHOST PGPORT PGUSER PGPASSWORD PGDATABASE PGSSLMODE; do
        if [ -n "${!name:-}" ]; then export "${name?}"; else unset "$name"; fi
    done
}

pg_tool() {
    local tool=$1
    if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN/$tool"; else command -v "$tool" || die "$tool is not installed (apt-get install postgresql-client, or set PG_BIN)"; fi
}

# The cache's path inside FILES_DIR, as tar names its members ("./compiled"); empty when the
# cache is elsewhere.
cache_member() {
    case $CACHE_DIR in
        "$FILES_DIR"/?*) echo "./${CACHE_DIR#"$FILES_DIR"/}" ;;
        *) echo "" ;;
    esac
}

# sqlite_copy SOURCE TARGET: SOURCE's database written over TARGET through SQLite's backup API
# (a consistent copy while the server writes; the target's journal dealt with as SQLite does).
sqlite_copy() {
    "$PYTHON" -c 'import sqlite3, sys
source, target = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
source.backup(target)
target.close()
source.close()' "$1" "$2"
}

backup() {
    local dest=$1 name folder partial cache
    read_settings
    # a backup holds password hashes and API tokens: readable by this user only (after the
    # settings, which may create the server's folders)
    umask 077
    mkdir -p "$dest"
    name="evalserver-backup-$(date -u +%Y%m%dT%H%M%SZ)"
    folder="$dest/$name"
    [ ! -e "$folder" ] || die "$folder exists already"
    # written under another name, renamed when complete: a folder with the final name is whole
    partial="$dest/.$name.partial"
    rm -rf "$partial"
    mkdir "$partial"
    {
        echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "database=$DB_KIND"
        echo "storage=$STORAGE_BACKEND"
    } >"$partial/backup.info"

    # 1. the database: one consistent snapshot (pg_dump's transaction; SQLite's backup API)
    if [ "$DB_KIND" = postgresql ]; then
        "$(pg_tool pg_dump)" --format=custom --file="$partial/database.pgdump" \
            || die "pg_dump of $PGDATABASE failed"
    else
        [ -f "$SQLITE_PATH" ] || die "no SQLite database at $SQLITE_PATH"
        sqlite_copy "$SQLITE_PATH" "$partial/database.sqlite3" || die "SQLite backup failed"
    fi

    # 2. then the stored files: every file of a row in that snapshot is there by now
    if [ -n "$FILES_DIR" ]; then
        cache=$(cache_member)
        local exclude=()
        [ -z "$cache" ] || exclude=(--anchored --exclude="$cache")
        if [ -d "$FILES_DIR" ]; then
            tar --create --file="$partial/media.tar" --directory="$FILES_DIR" "${exclude[@]}" . \
                || die "tar of $FILES_DIR failed"
        else  # nothing stored yet: an empty archive
            tar --create --file="$partial/media.tar" --files-from=/dev/null
        fi
        echo "media=$FILES_DIR" >>"$partial/backup.info"
        [ -z "$cache" ] || echo "media_excluded=$cache (the compiled label-set cache)" >>"$partial/backup.info"
    else
        echo "media=none: the files are in the object store ($STORAGE_BACKEND), kept by its own versioning or replication" >>"$partial/backup.info"
    fi

    (cd "$partial" && sha256sum -- * >MANIFEST.sha256)
    mv "$partial" "$folder"
    echo "$folder"
}

restore() {
    local folder=$1 kind
    [ -f "$folder/MANIFEST.sha256" ] || die "no MANIFEST.sha256 in $folder: not a whole backup"
    (cd "$folder" && sha256sum --check --strict --quiet MANIFEST.sha256) \
        || die "$folder does not match its manifest: not restoring it"
    read_settings
    kind=$(sed -n 's/^database=//p' "$folder/backup.info")
    [ "$kind" = "$DB_KIND" ] || die "the backup is of a $kind database, DATABASE_URL names $DB_KIND"

    if [ "$DB_KIND" = postgresql ]; then
        # --clean --if-exists: drops what the dump recreates, so an old or empty database works;
        # one transaction: a failed restore leaves the database as it was
        "$(pg_tool pg_restore)" --clean --if-exists --no-owner --exit-on-error \
            --single-transaction --dbname="$PGDATABASE" "$folder/database.pgdump" \
            || die "pg_restore into $PGDATABASE failed"
    else
        mkdir -p "$(dirname "$SQLITE_PATH")"
        sqlite_copy "$folder/database.sqlite3" "$SQLITE_PATH" || die "SQLite restore failed"
    fi

    if [ -f "$folder/media.tar" ]; then
        [ -n "$FILES_DIR" ] || die "the backup has stored files, but the storage is $STORAGE_BACKEND"
        mkdir -p "$FILES_DIR"
        tar --extract --file="$folder/media.tar" --directory="$FILES_DIR" \
            || die "untar into $FILES_DIR failed"
    fi
    echo "restored $folder"
}

[ $# -eq 2 ] || usage
case $1 in
    backup) backup "$2" ;;
    restore) restore "$2" ;;
    *) usage ;;
esac
