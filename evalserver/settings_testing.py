"""Settings for the test suite (pytest, mypy's Django plugin): the real settings, read from
the same environment, with a throwaway secret key when none is set and faster hashing.

Tests that need other values override them with pytest-django's `settings` fixture.
"""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-any-real-server")

from evalserver.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A SQLite test database in a file, not in memory, so that a real Celery worker process
# started by a test can open the same database (tests/conftest.py passes it the path).
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / "test-db.sqlite3")}  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30  # noqa: F405
