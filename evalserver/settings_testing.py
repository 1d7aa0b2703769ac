"""Settings for the test suite (pytest, mypy's Django plugin): the real settings, read from
the same environment, with a throwaway secret key when none is set and faster hashing.

Tests that need other values override them with pytest-django's `settings` fixture.
"""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-any-real-server")

from evalserver.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
