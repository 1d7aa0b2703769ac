"""The leaf of the settings package: where the environment is read from, and the few values
more than one part of the settings needs (DEBUG, REDIS_URL, TIME_ZONE). Every part imports what
it shares from here and nothing from its siblings' package, so the settings have no import
circle (tests/test_import_graph.py).

The variables are read from the environment and from a `.env` file at the project root, when
there is one (real environment variables win). A bad value is collected in `env.errors`; the
package (evalserver/settings/__init__.py) stops the process with every message at the end.
"""

from __future__ import annotations

from pathlib import Path

import environ

from evalserver.env import EnvReader

BASE_DIR = Path(__file__).resolve().parent.parent.parent

if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env")

env: EnvReader = EnvReader(BASE_DIR)

DEBUG: bool = env.get_bool("DEBUG", False)
REDIS_URL: str = env.get_redis_url("REDIS_URL", "redis://127.0.0.1:6379/0")
TIME_ZONE: str = "UTC"
