"""Django's own settings and the server's: https, metrics, the database, files and data,
uploads, checkpoints, logins, rate limits, the applications and the API. Part of the settings
package (evalserver/settings/__init__.py): import `django.conf.settings`, never this module.

docs/operators/settings.md lists the variables.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from evalserver.env import REQUIRED
from evalserver.settings.environment import BASE_DIR, DEBUG, REDIS_URL, env

# -- core ---------------------------------------------------------------------------------
SECRET_KEY: str = env.get_str(
    "SECRET_KEY",
    "django-insecure-development-only-key-never-use-in-production" if DEBUG else REQUIRED,
    hint="set it to a long random string (or DEBUG=true to use a development key)",
)
ALLOWED_HOSTS: list[str] = env.get_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

# -- https (secure by default with DEBUG=false: `manage.py check --deploy` passes) -------------
# The server is meant to sit behind a reverse proxy that ends TLS and sets X-Forwarded-Proto.
# Each can be turned off by its own variable: scripts/serve.sh turns them off for plain http on
# 127.0.0.1. HSTS preload only sends the header's `preload` flag; listing the domain in the
# browsers' preload list is a separate, manual request (hstspreload.org).
SECURE_SSL_REDIRECT: bool = env.get_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS: int = env.get_int(
    "SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 60 * 60, min_value=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS: bool = env.get_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD: bool = env.get_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SESSION_COOKIE_SECURE: bool = env.get_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE: bool = env.get_bool("CSRF_COOKIE_SECURE", not DEBUG)
# Trust the proxy's X-Forwarded-Proto: https. Only behind a proxy that sets it (and drops a
# client's own): a client talking to gunicorn directly could claim https.
SECURE_PROXY_SSL_HEADER: tuple[str, str] | None = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env.get_bool("SECURE_PROXY_SSL_HEADER", not DEBUG)
    else None
)

# The reverse proxies' addresses or networks: on their requests the client's address (what the
# login lockout and the rate limits count) is read from X-Forwarded-For, right to left
# (evalserver/client_address.py); from any other peer the header is ignored.
EVALSERVER_TRUSTED_PROXIES: list[str] = env.get_networks("EVALSERVER_TRUSTED_PROXIES")

# -- metrics (GET /metrics, Prometheus: evalserver/metrics_endpoint.py, docs/operations-metrics.md)
# Who may read them: clients from these addresses or networks (REMOTE_ADDR; behind a trusted
# proxy, the client's as its X-Forwarded-For says), and any client sending
# `Authorization: Bearer <token>` with this token. Others get 403. Loopback only by default;
# empty (EVALSERVER_METRICS_ALLOWED_IPS=none) leaves the token alone.
EVALSERVER_METRICS_ALLOWED_IPS: list[str] = (
    [] if (env.raw("EVALSERVER_METRICS_ALLOWED_IPS") or "").lower() == "none"
    else env.get_networks("EVALSERVER_METRICS_ALLOWED_IPS") or ["127.0.0.1/32", "::1/128"])
EVALSERVER_METRICS_TOKEN: str | None = env.get_str("EVALSERVER_METRICS_TOKEN", None)
if EVALSERVER_METRICS_TOKEN is not None and len(EVALSERVER_METRICS_TOKEN) < 16:
    env.errors.append("EVALSERVER_METRICS_TOKEN is too short: expected at least 16 characters")
# The folder where every process of this start keeps its metrics (prometheus_client's
# multiprocess mode: gunicorn's workers, Celery's pool processes). Set by scripts/serve.sh and
# docker/entrypoint.sh to a fresh folder at each start; read by prometheus_client itself at
# import, here only to be checked and read back at scrape time.
PROMETHEUS_MULTIPROC_DIR: Path | None = env.get_optional_path("PROMETHEUS_MULTIPROC_DIR")
if PROMETHEUS_MULTIPROC_DIR is not None and not PROMETHEUS_MULTIPROC_DIR.is_dir():
    env.errors.append(f"PROMETHEUS_MULTIPROC_DIR={PROMETHEUS_MULTIPROC_DIR} is not a folder: "
                      "create it (empty) before starting the server")
# A worker serves its own metrics (GET /metrics, the same access rules) on this port of
# EVALSERVER_METRICS_WORKER_ADDRESS, for a Prometheus that cannot read the web's folder (another
# container or host); 0: none (scripts/serve.sh's workers share the web's folder instead).
EVALSERVER_METRICS_WORKER_PORT: int = env.get_int("EVALSERVER_METRICS_WORKER_PORT", 0,
                                                  min_value=0)
EVALSERVER_METRICS_WORKER_ADDRESS: str = env.get_str("EVALSERVER_METRICS_WORKER_ADDRESS",
                                                     "127.0.0.1")

DATABASES = {
    "default": env.get_db("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}"),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# -- files ----------------------------------------------------------------------------------
MEDIA_ROOT: Path = env.get_path("MEDIA_ROOT", BASE_DIR / "var" / "media")
MEDIA_URL = "media/"
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
# The client's wheel that /client/ offers for download (its newest evalserver_client-*.whl):
# scripts/serve.sh and the image build it there from clients/python (scripts/lib.sh,
# client_wheel_build; docs/operators/one-machine.md, "The client's wheel").
EVALSERVER_CLIENT_WHEEL_DIR: Path = BASE_DIR / "var" / "client"
# Where stored files live: uploads, checkpoints, the compact prediction arrays and the compiled
# label-set versions (labelsets/<sha256>.npz). Every read and write goes through Django's
# storage API (leaderboard/common/storage.py), so this class is the only thing to change:
# the default keeps them under MEDIA_ROOT; S3 through django-storages is
#   EVALSERVER_STORAGE_BACKEND=leaderboard.common.object_storage.S3Storage
#   EVALSERVER_STORAGE_OPTIONS='{"bucket_name": "evalserver-media"}'
# (a JSON object, passed to the class as keyword arguments; credentials from the usual AWS_*
# variables). Web and worker processes must all name the same store.
EVALSERVER_STORAGE_BACKEND: str = env.get_dotted_path(
    "EVALSERVER_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage")
EVALSERVER_STORAGE_OPTIONS: dict[str, Any] = env.get_json_object("EVALSERVER_STORAGE_OPTIONS")
# The project's S3 storage (django-storages', writing through boto3's client)
S3_STORAGE = "leaderboard.common.object_storage.S3Storage"
if EVALSERVER_STORAGE_BACKEND.startswith("storages.") or EVALSERVER_STORAGE_BACKEND == S3_STORAGE:
    # django-storages is optional at runtime (requirements.txt): say so now, not at the first
    # upload. Found, not imported: a filesystem deployment never loads it or boto3.
    if importlib.util.find_spec("storages") is None:
        env.errors.append(f"EVALSERVER_STORAGE_BACKEND={EVALSERVER_STORAGE_BACKEND!r} needs "
                          "django-storages[s3] (pip install -r requirements.txt)")
    # A stored file opened for reading is fetched in parts (boto3's transfer) into a spooled
    # temporary file; django-storages keeps it all in memory unless this caps that, and
    # checkpoints and uploads reach EVALSERVER_MAX_UPLOAD_BYTES (docs/operators/many-machines.md,
    # "Files in object storage": streaming).
    if EVALSERVER_STORAGE_BACKEND.startswith("storages.backends.s3") or \
            EVALSERVER_STORAGE_BACKEND == S3_STORAGE:
        EVALSERVER_STORAGE_OPTIONS.setdefault("max_memory_size", 8 * 1024 * 1024)
STORAGES = {
    "default": {"BACKEND": EVALSERVER_STORAGE_BACKEND, "OPTIONS": EVALSERVER_STORAGE_OPTIONS},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}


def _default_data_dir() -> Path:
    shared = BASE_DIR.parent / "shared" / "data"
    return shared if shared.is_dir() else BASE_DIR / "data"


# The public label files (see docs/operators/data.md); read only, never copied into the project.
EVALSERVER_DATA_DIR: Path = env.get_path("EVALSERVER_DATA_DIR", _default_data_dir())
# `manage.py fetch_data` downloads those files from their public sources (data-sources.toml),
# or from this one mirror laid out like the data directory when it is set.
EVALSERVER_DATA_BASE_URL: str | None = env.get_optional_http_url("EVALSERVER_DATA_BASE_URL")
# fetch_data gives a source up after this many seconds with nothing received, or without the
# whole file after EVALSERVER_FETCH_DEADLINE seconds (a second per 10 kB over 3 MB): else a
# server trickling a byte now and then holds the command, and a deployment, for ever.
EVALSERVER_FETCH_STALL_TIMEOUT: int = env.get_int(
    "EVALSERVER_FETCH_STALL_TIMEOUT", 30, min_value=1)
EVALSERVER_FETCH_DEADLINE: int = env.get_int("EVALSERVER_FETCH_DEADLINE", 300, min_value=1)
# Cache of compiled label sets (rebuilt from the data files when missing; safe to delete).
EVALSERVER_CACHE_DIR: Path = env.get_path("EVALSERVER_CACHE_DIR", MEDIA_ROOT / "compiled")
# The ImageNet multi-label file (human_accuracy_v3.0.0.json); optional.
EVALSERVER_MULTILABEL_FILE: Path | None = env.get_optional_path("EVALSERVER_MULTILABEL_FILE")
EVALSERVER_MAX_UPLOAD_BYTES: int = env.get_int(
    "EVALSERVER_MAX_UPLOAD_BYTES", 512 * 1024 * 1024, min_value=1
)
# Any account's request to host is approved at once (docs/hosts/teams.md); off by default: a
# site admin decides each.
EVALSERVER_HOST_TEAMS_SELF_SERVICE: bool = env.get_bool("EVALSERVER_HOST_TEAMS_SELF_SERVICE",
                                                        False)
# Prediction files up to these sizes are parsed in the request, so a bad one is refused at once
# (400, nothing stored); larger ones are checked by the worker (leaderboard/submissions/
# file_checks.py). Each stays under about 1 s (bench/inline_check.py): NumPy arrays stored as
# they are (.npy, an uncompressed .npz) cost 0.2-2 ns a byte; text (.json, .csv) and compressed
# .npz 7-50 ns a byte. 0 turns the check off for that kind.
EVALSERVER_INLINE_CHECK_BYTES: int = env.get_int(
    "EVALSERVER_INLINE_CHECK_BYTES", 256 * 1024 * 1024, min_value=0)
EVALSERVER_INLINE_CHECK_TEXT_BYTES: int = env.get_int(
    "EVALSERVER_INLINE_CHECK_TEXT_BYTES", 16 * 1024 * 1024, min_value=0)
# The stored files of a failed submission, and the stored .zip of a refused bundle upload, are
# removed this many days after it failed (the periodic leaderboard.tasks.cpu.remove_failed_files; a
# submission's page says until when they are kept).
EVALSERVER_FAILED_FILES_RETENTION_DAYS: int = env.get_int(
    "EVALSERVER_FAILED_FILES_RETENTION_DAYS", 7, min_value=0)
# Submissions one user may make per benchmark in any 24 hours (guards the test labels
# against adaptive overfitting); 0 turns the quota off.
EVALSERVER_DAILY_QUOTA: int = env.get_int("EVALSERVER_DAILY_QUOTA", 10, min_value=0)
# (The time limits and attempts of scoring and of the other jobs: evalserver/settings/jobs.py.)
# A scoring or re-scoring refreshes the boards' significance (rank_ub) this many seconds after
# it commits, once for a burst of scorings (leaderboard/submissions/board_significance.py); 0:
# at once, one refresh queued until it starts (it covers every scoring committed before then).
EVALSERVER_SIGNIFICANCE_DELAY: int = env.get_int("EVALSERVER_SIGNIFICANCE_DELAY", 0, min_value=0)
# Threads of a full significance recompute (a new label-set version, many rows changed).
EVALSERVER_SIGNIFICANCE_THREADS: int = env.get_int("EVALSERVER_SIGNIFICANCE_THREADS", 2,
                                                   min_value=1)
# Memory (MB) each worker process keeps the hit vectors of recently refreshed boards in, so that
# a refresh reads only the new ones (leaderboard/submissions/board_significance_hits.py); at least
# the board being refreshed is kept whatever its size.
EVALSERVER_SIGNIFICANCE_CACHE_MB: int = env.get_int("EVALSERVER_SIGNIFICANCE_CACHE_MB", 512,
                                                    min_value=0)
# -- Checkpoint submissions (run by a gpu-queue worker; the CPU is used when there is no GPU) --
# Where the images of example sets other than MNIST's are (MNIST's come from the data directory),
# for checkpoints, the image audits and the review pages (docs/operators/examples.md):
# the CIFAR-10 python "test_batch" file, the CIFAR-10.1 v6 images (.npy, uint8 [2000,32,32,3])
# and a folder of the 50,000 ImageNet validation JPEGs. Unset: no checkpoint runs on that set.
EVALSERVER_CIFAR10_TEST_BATCH: Path | None = env.get_optional_path("EVALSERVER_CIFAR10_TEST_BATCH")
EVALSERVER_CIFAR10_1_V6_IMAGES: Path | None = env.get_optional_path(
    "EVALSERVER_CIFAR10_1_V6_IMAGES")
EVALSERVER_IMAGENET_VAL_DIR: Path | None = env.get_optional_path("EVALSERVER_IMAGENET_VAL_DIR")
# The folder of IMDB's test reviews (aclImdb/test of the release, whose neg/ and pos/ hold
# <id>_<stars>.txt): the review pages show an example's text from it (docs/bundles.md §4.2).
EVALSERVER_IMDB_TEST_DIR: Path | None = env.get_optional_path("EVALSERVER_IMDB_TEST_DIR")
EVALSERVER_CHECKPOINT_MAX_BYTES: int = env.get_int(
    "EVALSERVER_CHECKPOINT_MAX_BYTES", 256 * 1024 * 1024, min_value=1)
# "auto" uses CUDA when the worker has it; "cpu" or "cuda" force one.
EVALSERVER_INFERENCE_DEVICE: str = env.get_choice(
    "EVALSERVER_INFERENCE_DEVICE", "auto", choices=("auto", "cpu", "cuda"))
# Limits on the child process that runs an uploaded model (memory: address space, CPU only).
EVALSERVER_INFERENCE_MEMORY_BYTES: int = env.get_int(
    "EVALSERVER_INFERENCE_MEMORY_BYTES", 4 * 1024**3, min_value=64 * 1024**2)
EVALSERVER_INFERENCE_WALL_SECONDS: int = env.get_int(
    "EVALSERVER_INFERENCE_WALL_SECONDS", 600, min_value=1)

# Failed logins (API token, login page, admin login) allowed in a window per username and
# client address together, per client address, and per username from every address together
# (a much higher count: one address's guesses lock only that address out of the account); past
# one, the attempts it covers are refused with 429 until the window ends
# (leaderboard/accounts/login_throttle.py).
EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS: int = env.get_int(
    "EVALSERVER_LOGIN_FAILURES_PER_USER_ADDRESS", 10, min_value=1)
EVALSERVER_LOGIN_FAILURES_PER_ADDRESS: int = env.get_int(
    "EVALSERVER_LOGIN_FAILURES_PER_ADDRESS", 50, min_value=1)
EVALSERVER_LOGIN_FAILURES_PER_USER: int = env.get_int(
    "EVALSERVER_LOGIN_FAILURES_PER_USER", 100, min_value=1)
EVALSERVER_LOGIN_WINDOW_SECONDS: int = env.get_int("EVALSERVER_LOGIN_WINDOW_SECONDS", 900,
                                                   min_value=1)

# The API's rate limits (leaderboard/common/throttling.py, docs/api.md §3 'Rate limits'):
# requests per client address without a user, per user with one, and two narrower scopes on
# top of those: uploads (POST of a submission or a bundle) and token creation (POST
# /api/auth/token/, per address; the failed-login limits above still apply). `none`: no limit.
EVALSERVER_THROTTLE_ANON: str | None = env.get_rate("EVALSERVER_THROTTLE_ANON", "120/minute")
EVALSERVER_THROTTLE_USER: str | None = env.get_rate("EVALSERVER_THROTTLE_USER", "600/minute")
EVALSERVER_THROTTLE_UPLOADS: str | None = env.get_rate("EVALSERVER_THROTTLE_UPLOADS", "60/hour")
EVALSERVER_THROTTLE_TOKEN: str | None = env.get_rate("EVALSERVER_THROTTLE_TOKEN", "20/minute")
# what the throttles read (by scope), at each request
EVALSERVER_THROTTLE_RATES: dict[str, str | None] = {
    "anon": EVALSERVER_THROTTLE_ANON, "user": EVALSERVER_THROTTLE_USER,
    "uploads": EVALSERVER_THROTTLE_UPLOADS, "token": EVALSERVER_THROTTLE_TOKEN}

# Uploads: the size cap is enforced while the request streams in (leaderboard/common/
# uploads.py); files over FILE_UPLOAD_MAX_MEMORY_SIZE go to a temporary file in a folder of
# their own (created below), where those of uploads cut short can be found and removed.
FILE_UPLOAD_HANDLERS = [
    "leaderboard.common.uploads.SizeLimitUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "leaderboard.common.uploads.TrackedTemporaryFileUploadHandler",
]
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
EVALSERVER_UPLOAD_TEMP_DIR: Path = env.get_path("EVALSERVER_UPLOAD_TEMP_DIR",
                                                BASE_DIR / "var" / "uploads")
FILE_UPLOAD_TEMP_DIR = str(EVALSERVER_UPLOAD_TEMP_DIR)
# A body silent this many seconds, or not whole after the deadline, is refused with 408
# (leaderboard/common/request_body.py): a trickling client would hold a web thread for ever.
EVALSERVER_UPLOAD_STALL_TIMEOUT: int = env.get_int("EVALSERVER_UPLOAD_STALL_TIMEOUT", 30,
                                                   min_value=1)
EVALSERVER_UPLOAD_DEADLINE: int = env.get_int("EVALSERVER_UPLOAD_DEADLINE", 3600, min_value=1)

# -- applications -----------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "rules",
    # accounts (evalserver/settings/accounts.py)
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.github",
    "allauth.socialaccount.providers.orcid",
    "allauth.socialaccount.providers.google",
    "allauth.mfa",
    "leaderboard",
]

MIDDLEWARE = [
    # The client's address behind a trusted proxy, as REMOTE_ADDR, before anything reads it
    # (evalserver/client_address.py): /metrics, the login lockout and the API's rate limits.
    "evalserver.client_address.ClientAddressMiddleware",
    # /healthz first: a probe on 127.0.0.1 over http is answered before the host check and
    # the https redirect (evalserver/health.py).
    "evalserver.health.HealthCheckMiddleware",
    # /metrics (its own access rules, before the host check too), and every other request's
    # time by route (evalserver/metrics_endpoint.py)
    "evalserver.metrics_endpoint.MetricsMiddleware",
    # around all the others: removes an upload's temporary files however the request ended
    "leaderboard.common.uploads.UploadTempFilesMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves /static/ from gunicorn itself (collectstatic output), no CDN and no nginx needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # a signed-in user without an email address is asked for one, and a maintainer without a
    # TOTP authenticator for one when EVALSERVER_MFA_REQUIRED (leaderboard/accounts/middleware.py)
    "leaderboard.accounts.middleware.AccountCompletionMiddleware",
]

ROOT_URLCONF = "evalserver.urls"
WSGI_APPLICATION = "evalserver.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Each domain of the leaderboard app keeps its pages in <domain>/templates/leaderboard/;
        # the pages shared by all (base.html, form fields, pagination) stay in the app's own
        # templates/ folder, found through APP_DIRS.
        "DIRS": sorted((BASE_DIR / "leaderboard").glob("*/templates")),
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PAGINATION_CLASS": "leaderboard.common.pagination.IntegerPageNumberPagination",
    # No OPTIONS metadata: DRF builds it from a view's serializer_class, which views with
    # one input and one output serializer per operation do not have (it answered 500).
    # OPTIONS answers 405 in the error shape; the schema at /api/schema/ describes everything.
    "DEFAULT_METADATA_CLASS": None,
    "PAGE_SIZE": 50,
    # Every API view's rate limits, counted in the `throttle` cache per client address
    # (evalserver/client_address.py) or user, with RateLimit-* headers; the rates are
    # EVALSERVER_THROTTLE_RATES, read at each request.
    "DEFAULT_THROTTLE_CLASSES": [
        "leaderboard.common.throttling.AnonThrottle",
        "leaderboard.common.throttling.UserThrottle",
        "leaderboard.common.throttling.MethodScopeThrottle",
    ],
    # Every 4xx answers {"error": {"code", "message", "field"}} (docs/api.md §3).
    "EXCEPTION_HANDLER": "leaderboard.common.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "evalserver API",
    "DESCRIPTION": "Submit predictions, read scores and leaderboards (docs/api.md).",
    "VERSION": "1",
    # Swagger UI assets from the drf-spectacular-sidecar package: no CDN at run time.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Request bodies get their own components, so that a required text field says minLength 1
    # (a blank one is refused) where the response's field of the same name need not.
    "COMPONENT_SPLIT_REQUEST": True,
    # Every operation lists every status it can answer, in the error shape: the statuses that
    # come from the framework around all views are added once here (leaderboard/common/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "leaderboard.common.schema.document_common_errors",
    ],
}
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.get_str("LOG_LEVEL", "INFO").upper()},
}

# -- caches (Celery's settings, read by evalserver/celery.py: evalserver/settings/jobs.py) -----
# `default` stays in each process (rendered leaderboards keyed by generation: see
# leaderboard/presentation/caching.py); `throttle` is shared through Redis, so that every web
# process counts the same failed logins and the same requests of the rate limits.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                 "LOCATION": REDIS_URL, "KEY_PREFIX": "evalserver-throttle",
                 "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}},
}
