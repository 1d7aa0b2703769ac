"""scripts/backup.sh backup|restore (docs/operators/backup.md), run as an operator runs it, on
the database engine the suite runs on: PostgreSQL under scripts/test.sh (pg_dump/pg_restore,
in a database of its own created on the suite's cluster), SQLite otherwise (and in test.sh's
SQLite run: the script has a SQLite branch).

A server is built in that fresh database and media folder by another process (migrate, load
CIFAR-10, score three real models: tests/deploy/backup_world.py), backed up, wiped (database
dropped, media and cache folders deleted), restored, and must answer the leaderboard API with
the same JSON and give back every stored file with the same bytes.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from tests.api_support import top1_accuracy
from tests.deploy.backup_world import MODELS
from tests.helpers import PROJECT_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.sqlite]

SCRIPT = str(PROJECT_ROOT / "scripts" / "backup.sh")


@dataclass
class Database:
    url: str
    wipe: Any  # () -> None: the database gone, an empty one (PostgreSQL) or none (SQLite) left


def _postgres_admin(db: dict[str, Any]) -> Any:
    import psycopg

    return psycopg.connect(host=db["HOST"] or None, port=db["PORT"] or None,
                           user=db["USER"] or None, password=db["PASSWORD"] or None,
                           dbname="postgres", autocommit=True)


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    """A database of this test's own, on the engine (and the cluster) the suite uses."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        path = tmp_path / "db.sqlite3"
        yield Database(f"sqlite:///{path}", lambda: path.unlink())
        return
    name = f"backup_{uuid.uuid4().hex[:12]}"

    def recreate() -> None:
        with _postgres_admin(db) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')

    recreate()
    try:
        yield Database(f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:"
                       f"{db['PORT'] or 5432}/{name}", recreate)
    finally:
        with _postgres_admin(db) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _world(command: str, env: dict[str, str]) -> dict[str, Any]:
    out = _run([sys.executable, "-m", "tests.deploy.backup_world", command], env)
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _file_hashes(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _pg_bin() -> dict[str, str]:
    """PG_BIN: the newest installed PostgreSQL's tools, as scripts/test.sh starts that one's
    server (a pg_dump older than the server refuses to dump it)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_dump"),
                   key=lambda p: int(Path(p).parent.parent.name))
    return {"PG_BIN": str(Path(found[-1]).parent)} if found else {}


def test_it_restores_the_leaderboard_and_every_stored_file(database: Database,
                                                          tmp_path: Path) -> None:
    media = tmp_path / "media"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalserver.settings_testing",
           "DATABASE_URL": database.url, "MEDIA_ROOT": str(media),
           # the default place: inside the media folder, which the backup leaves out
           "EVALSERVER_CACHE_DIR": str(media / "compiled"),
           "EVALSERVER_DATA_DIR": str(settings.EVALSERVER_DATA_DIR),
           "PYTHON": sys.executable, **_pg_bin()}
    before = _world("build", env)
    stored = _file_hashes(media)
    # the three models, each scored on the original labels as numpy counts its hits
    assert {row["model_name"]: row["scores"]["original"]["correct"]
            for row in before["leaderboard"]["rows"]} == \
        {model: top1_accuracy(settings.EVALSERVER_DATA_DIR, model, "cifar10-test")[1]
         for model in MODELS}
    assert any(name.startswith("compiled/") for name in stored)  # the cache was written
    kept = {name: digest for name, digest in stored.items() if not name.startswith("compiled/")}
    assert {name.split("/")[0] for name in kept} == {"compact", "labelsets", "uploads"}
    assert {name: kept[name] for name in before["files"]} == before["files"]

    folder = Path(_run(["bash", SCRIPT, "backup", str(tmp_path / "backups")], env).strip())

    engine = "pgdump" if database.url.startswith("postgres") else "sqlite3"
    listed = (folder / "MANIFEST.sha256").read_text().splitlines()
    assert sorted(line.split("  ")[1] for line in listed) == \
        ["backup.info", f"database.{engine}", "media.tar"]
    for line in listed:
        digest, name = line.split("  ")
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest

    database.wipe()
    shutil.rmtree(media)
    _run(["bash", SCRIPT, "restore", str(folder)], env)

    assert _file_hashes(media) == kept  # every stored file, byte for byte; no cache
    after = _world("state", env)
    assert after == before


def test_it_refuses_a_backup_that_does_not_match_its_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "evalserver-backup-20260101T000000Z"
    folder.mkdir()
    (folder / "media.tar").write_bytes(b"a tar")
    (folder / "MANIFEST.sha256").write_text(
        f"{hashlib.sha256(b'another tar').hexdigest()}  media.tar\n")

    done = subprocess.run(["bash", SCRIPT, "restore", str(folder)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "DATABASE_URL": "postgres://nobody@127.0.0.1:1/x"})

    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == \
        f"backup.sh: {folder} does not match its manifest: not restoring it"
