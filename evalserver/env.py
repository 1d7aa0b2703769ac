"""Strict reading of settings from environment variables.

django-environ parses URLs well but is lenient elsewhere (`DEBUG=maybe` reads as False,
`int("abc")` fails without naming the variable). `EnvReader` wraps it so that every bad
value is collected with the name of its variable, and `EnvReader.check()` raises one
ImproperlyConfigured that lists them all: the process stops before serving anything.

An empty value counts as unset. Relative paths are taken relative to the project root,
so the server reads the same files wherever it is started from.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import environ
from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
REDIS_SCHEMES = frozenset({"redis", "rediss", "unix"})
_PASSWORD_IN_URL = re.compile(r"://([^:/@]*):[^@/]*@")
_DOTTED_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\Z")
# a DRF throttle rate: DRF reads only the period's first letter ("10/month" would be 10 a
# minute), so only these words pass
_RATE = re.compile(r"^([1-9][0-9]*)/(s|sec|second|m|min|minute|h|hour|d|day)\Z")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class EnvReader:
    def __init__(self, base_dir: Path, environ_map: Mapping[str, str] | None = None) -> None:
        self.base_dir = base_dir
        self._environ = os.environ if environ_map is None else environ_map
        self.errors: list[str] = []

    # -- helpers ---------------------------------------------------------------------------
    def raw(self, name: str) -> str | None:
        value = self._environ.get(name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def _missing(self, name: str, default: Any, hint: str) -> Any:
        if default is REQUIRED:
            self.errors.append(f"{name} is not set{': ' + hint if hint else ''}")
            return None
        return default

    def _bad(self, name: str, value: str, expected: str) -> None:
        shown = _PASSWORD_IN_URL.sub(r"://\1:***@", value)
        self.errors.append(f"{name}={shown!r} is not valid: expected {expected}")

    def check(self) -> None:
        if self.errors:
            lines = "\n".join(f"  - {error}" for error in self.errors)
            raise ImproperlyConfigured(
                f"Bad settings in the environment (see docs/operators/settings.md):\n{lines}"
            )

    # -- typed readers -----------------------------------------------------------------------
    def get_str(self, name: str, default: Any = REQUIRED, *, hint: str = "") -> Any:
        value = self.raw(name)
        return self._missing(name, default, hint) if value is None else value

    def get_bool(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        word = value.lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        self._bad(name, value, "one of " + ", ".join(sorted(TRUE_WORDS | FALSE_WORDS)))
        return default

    def get_int(self, name: str, default: int, *, min_value: int | None = None) -> int:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(value.replace("_", ""))
        except ValueError:
            self._bad(name, value, "an integer")
            return default
        if min_value is not None and number < min_value:
            self._bad(name, value, f"an integer >= {min_value}")
            return default
        return number

    def get_choice(self, name: str, default: str, *, choices: tuple[str, ...]) -> str:
        value = self.raw(name)
        if value is None:
            return default
        if value.strip().lower() not in choices:
            self._bad(name, value, "one of " + ", ".join(choices))
            return default
        return value.strip().lower()

    def get_list(self, name: str, default: list[str]) -> list[str]:
        value = self.raw(name)
        if value is None:
            return list(default)
        items = [item.strip() for item in value.split(",") if item.strip()]
        if not items:
            self._bad(name, value, "a comma-separated list")
            return list(default)
        return items

    def get_networks(self, name: str) -> list[str]:
        """Comma-separated IP addresses or networks (CIDR); none when unset."""
        value = self.raw(name)
        if value is None:
            return []
        items = [item.strip() for item in value.split(",") if item.strip()]
        try:
            return [str(ipaddress.ip_network(item, strict=False)) for item in items]
        except ValueError:
            self._bad(name, value, "comma-separated IP addresses or networks such as "
                      "172.16.0.0/12,10.0.0.5")
            return []

    def get_rate(self, name: str, default: str | None) -> str | None:
        """A request rate such as `100/minute` (DRF's throttle rates); `none`: no limit."""
        value = self.raw(name)
        if value is None:
            return default
        if value.lower() in ("none", "off"):
            return None
        match = _RATE.match(value.lower().replace(" ", ""))
        if match is None:
            self._bad(name, value, "a rate such as 100/minute (a count per second, minute, "
                      "hour or day) or none")
            return default
        return f"{match[1]}/{match[2]}"

    def get_dotted_path(self, name: str, default: str) -> str:
        """A class named by its import path (checked for form only: importing it is Django's
        job, once the settings are read)."""
        value = self.raw(name)
        if value is None:
            return default
        if not _DOTTED_PATH.match(value):
            self._bad(name, value, "a dotted import path such as " + default)
            return default
        return value

    def get_json_object(self, name: str) -> dict[str, Any]:
        value = self.raw(name)
        if value is None:
            return {}
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            self._bad(name, value, 'a JSON object such as {"bucket_name": "media"}')
            return {}
        return parsed

    def get_path(self, name: str, default: Path) -> Path:
        return self.get_optional_path(name) or default

    def get_optional_path(self, name: str) -> Path | None:
        value = self.raw(name)
        if value is None:
            return None
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    def get_optional_http_url(self, name: str) -> str | None:
        """An http(s) URL with a host, without its trailing slash; None when unset."""
        value = self.raw(name)
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            self._bad(name, value, "an http:// or https:// URL such as https://mirror.example.org/data")
            return None
        return value.rstrip("/")

    def get_db(self, name: str, default: str) -> dict[str, Any]:
        value = self.raw(name)
        if value is None:
            return dict(environ.Env.db_url_config(default))
        scheme = value.split("://", 1)[0] if "://" in value else ""
        if scheme not in environ.Env.DB_SCHEMES:
            self._bad(name, value, "a database URL such as postgres://user:pass@host:5432/name "
                      "or sqlite:////absolute/path.sqlite3")
            return dict(environ.Env.db_url_config(default))
        try:
            return dict(environ.Env.db_url_config(value))
        except ValueError as exc:
            self._bad(name, value, f"a well-formed database URL ({exc})")
            return dict(environ.Env.db_url_config(default))

    def get_redis_url(self, name: str, default: str) -> str:
        value = self.raw(name)
        if value is None:
            return default
        try:
            parsed = urlparse(value)
            parsed.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            self._bad(name, value, "a URL such as redis://host:6379/0")
            return default
        if parsed.scheme not in REDIS_SCHEMES:
            self._bad(name, value, "a URL such as redis://host:6379/0 (redis://, rediss://, unix://)")
            return default
        return value
