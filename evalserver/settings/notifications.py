"""The settings of notifications (leaderboard/notifications/) and of the email they send. Part
of the settings package (evalserver/settings/__init__.py): import `django.conf.settings`, never
this module.

docs/operators/settings.md lists the variables.
"""

from __future__ import annotations

from pathlib import Path

from evalserver.settings.environment import DEBUG, env
from evalserver.settings.jobs import EVALSERVER_NOTIFY_TIME_LIMIT

# -- email (sent by a worker only, never in a request) ------------------------------------------
# The console backend prints mail in development (DEBUG=true); SMTP otherwise, with the host
# below. The test suite uses Django's locmem backend (pytest-django sets it; and
# settings_testing for the workers the tests start, unless their environment says otherwise).
EMAIL_BACKEND: str = env.get_dotted_path(
    "EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend" if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend")
# the folder of Django's file-based backend (EMAIL_BACKEND=django.core.mail.backends.filebased.
# EmailBackend: each message written to a file there, e.g. to read them in a test)
EMAIL_FILE_PATH: Path | None = env.get_optional_path("EMAIL_FILE_PATH")
EMAIL_HOST: str = env.get_str("EMAIL_HOST", "localhost")
EMAIL_PORT: int = env.get_int("EMAIL_PORT", 25, min_value=1)
EMAIL_HOST_USER: str = env.get_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD: str = env.get_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS: bool = env.get_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL: bool = env.get_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT: int = env.get_int("EMAIL_TIMEOUT", 10, min_value=1)
DEFAULT_FROM_EMAIL: str = env.get_str("DEFAULT_FROM_EMAIL", "evalserver@localhost")
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    env.errors.append("EMAIL_USE_TLS and EMAIL_USE_SSL are both true: set at most one")

# -- webhooks (docs/api.md, 'Notifications and webhooks') ----------------------------------------
# Seconds one POST may take in all, from connecting to the answer's headers: a receiver
# that trickles its answer is cut off then, and the try is logged and tried again
# (leaderboard/notifications/posting.py). Under a try's soft time limit, which would fail the
# delivery unlogged.
EVALSERVER_WEBHOOK_TIMEOUT: int = env.get_int("EVALSERVER_WEBHOOK_TIMEOUT", 10, min_value=1)
if EVALSERVER_WEBHOOK_TIMEOUT > EVALSERVER_NOTIFY_TIME_LIMIT - 5:
    env.errors.append(f"EVALSERVER_WEBHOOK_TIMEOUT ({EVALSERVER_WEBHOOK_TIMEOUT} s) must be at "
                      f"least 5 s under EVALSERVER_NOTIFY_TIME_LIMIT "
                      f"({EVALSERVER_NOTIFY_TIME_LIMIT} s), the time limit of one try")
# Webhook endpoints one user may have (each event is POSTed to every one of them).
EVALSERVER_WEBHOOK_MAX_ENDPOINTS: int = env.get_int("EVALSERVER_WEBHOOK_MAX_ENDPOINTS", 10,
                                                    min_value=1)
# Test events (the "send a test event" button, POST /api/notifications/webhooks/test/) one
# user may send in an hour; each goes to every endpoint of theirs.
EVALSERVER_WEBHOOK_TESTS_PER_HOUR: int = env.get_int("EVALSERVER_WEBHOOK_TESTS_PER_HOUR", 6,
                                                     min_value=1)
# A failed try (a 5xx answer, no answer, an email server away) is sent again this many
# milliseconds later, then twice that, four times that... (docs/api.md, 'Retries').
EVALSERVER_NOTIFY_BACKOFF_MS: int = env.get_int("EVALSERVER_NOTIFY_BACKOFF_MS", 30_000,
                                                min_value=1)
# Webhook URLs that resolve to loopback, private, link-local, multicast or reserved addresses
# are refused (when saved and again before every POST), so that a user cannot make the server
# reach the operator's own network. True lets them through (a receiver on the same host, tests).
EVALSERVER_WEBHOOK_ALLOW_PRIVATE: bool = env.get_bool("EVALSERVER_WEBHOOK_ALLOW_PRIVATE", False)
# Maintainers may be told when a benchmark's open review queue reaches this many items.
EVALSERVER_REVIEW_QUEUE_NOTIFY_THRESHOLD: int = env.get_int(
    "EVALSERVER_REVIEW_QUEUE_NOTIFY_THRESHOLD", 50, min_value=1)
