"""Settings for the test suite (pytest, mypy's Django plugin): the real settings, read from
the same environment, with a throwaway secret key when none is set and faster hashing.

Tests that need other values override them with pytest-django's `settings` fixture.
"""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-any-real-server")
# The workers a test starts keep their mail in memory (pytest-django does so in the test's own
# process): none reaches for an SMTP server. A test that reads a worker's mail names another
# backend in the worker's environment (tests/accounts/test_account_browser.py).
os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")

# pytest-xdist runs the suite in several processes (scripts/test.sh: `-n 2`), named gw0, gw1,
# ...: each takes a Redis database of its own (the URL's number plus its index), so that the
# Celery workers one process starts never take another's tasks and one process's cache and
# login-count clears do not reach the other's. Done once, in the pytest process: what it
# starts (a Celery worker, a child pytest) inherits the rewritten REDIS_URL, and a test that
# hands a child another database on purpose keeps it.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if (_xdist_worker.startswith("gw") and os.environ.get("REDIS_URL")
        and not os.environ.get("EVALSERVER_TEST_REDIS_PER_WORKER")):
    from urllib.parse import urlsplit, urlunsplit

    _redis = urlsplit(os.environ["REDIS_URL"])
    _number = int(_redis.path.strip("/") or 0) + int(_xdist_worker[2:])
    os.environ["REDIS_URL"] = urlunsplit(_redis._replace(path=f"/{_number}"))
    os.environ["EVALSERVER_TEST_REDIS_PER_WORKER"] = "1"

from evalserver.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A SQLite test database in a file, not in memory, so that a real Celery worker process
# started by a test can open the same database (tests/conftest.py passes it the path).
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # One file per pytest process, so two test runs in one checkout do not share it.
    _test_db = BASE_DIR / "var" / f"test-db-{os.getpid()}.sqlite3"  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(_test_db)}  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30  # noqa: F405
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    # No statement of a test runs past two minutes (the slowest takes a few seconds): one
    # planned badly (a nested loop over a table the planner believes empty) fails there,
    # naming itself, instead of holding its locks until pytest-timeout and stalling every later
    # test of its process behind them, as it once did until CI's time ran out. The processes
    # a test starts with these settings (Celery workers, gunicorn) get the limit too.
    # Every statement planned for its own parameters and the tables' current size
    # (plan_cache_mode): a test process's connection lives through hundreds of tests, and a
    # generic plan cached while a table was small (the foreign-key checks' `WHERE id = $1`
    # on review items, planned as a scan after a few rows) was reused for the ~49,000 links
    # an ImageNet scoring writes: their deferred checks at the test's end ran past the
    # limit above, depending on which tests the process had run before.
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = (  # noqa: F405
        "-c statement_timeout=120s -c plan_cache_mode=force_custom_plan")

# WhiteNoise warns at start-up when STATIC_ROOT is missing (collectstatic has not run in a
# fresh checkout); tests serve app static files through the finders instead.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405

# The test client and live servers speak plain http: none of the https settings that
# DEBUG=false turns on (tests/evalserver/test_settings_security.py checks those with the real
# settings).
SECURE_SSL_REDIRECT = False
SECURE_HSTS_SECONDS = 0
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_PROXY_SSL_HEADER = None
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "http"  # the links in allauth's emails

# No rate limits: the suite makes many API requests from one address, many of them faster
# than any real rate allows. The tests of the limits set real rates themselves
# (tests/common/test_throttling.py).
EVALSERVER_THROTTLE_RATES = {scope: None for scope in EVALSERVER_THROTTLE_RATES}  # noqa: F405
