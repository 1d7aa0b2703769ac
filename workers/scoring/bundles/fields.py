"""Typed reading of one TOML table: every read names its field, unread keys are refused.

`Table.done()` refuses any key that no read asked for, so a misspelt optional field is an
`unknown_field` error instead of a silently ignored setting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import BundleError

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$")
_MISSING: Any = object()

TOML_TYPES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "a table",
}


def type_name(value: object) -> str:
    return TOML_TYPES.get(type(value), type(value).__name__)


def check_relative_path(value: str, *, file: str, field: str) -> str:
    """A path the manifest may name: relative, `/`-separated, no `..`, no empty part."""
    parts = value.split("/")
    if (
        not value
        or value.startswith("/")
        or "\\" in value
        or "\0" in value
        or re.match(r"^[A-Za-z]:", value)
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise BundleError(
            "path_escapes",
            f"{value!r} is not a relative path inside the bundle's folder "
            "(absolute, `..`, `.`, `\\` or an empty part)",
            file=file,
            field=field,
        )
    return value


class Table:
    """One manifest table; `prefix` is its dotted field name (`label_sets.corrected`)."""

    def __init__(self, data: Mapping[str, Any], *, file: str, prefix: str) -> None:
        self.data = data
        self.file = file
        self.prefix = prefix
        self.read: set[str] = set()

    def field(self, key: str) -> str:
        if not key:
            return self.prefix
        return f"{self.prefix}.{key}" if self.prefix else key

    def error(self, code: str, key: str, message: str) -> BundleError:
        return BundleError(code, message, file=self.file, field=self.field(key))

    def has(self, key: str) -> bool:
        return key in self.data

    def _get(self, key: str, default: Any, expected: type, what: str) -> Any:
        self.read.add(key)
        if key not in self.data:
            if default is _MISSING:
                raise self.error("missing_field", key, f"required, {what}")
            return default
        value = self.data[key]
        # bool is an int in Python but not in TOML: `size = true` is a wrong type.
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise self.error("wrong_type", key, f"expected {what}, got {type_name(value)}")
        return value

    def string(self, key: str, default: Any = _MISSING) -> Any:
        return self._get(key, default, str, "a string")

    def integer(self, key: str, default: Any = _MISSING, *, minimum: int | None = None,
            maximum: int | None = None) -> Any:
        value = self._get(key, default, int, "an integer")
        if value is not None and minimum is not None and value < minimum:
            raise self.error("bad_value", key, f"must be at least {minimum}, got {value}")
        if value is not None and maximum is not None and value > maximum:
            raise self.error("bad_value", key, f"must be at most {maximum}, got {value}")
        return value

    def boolean(self, key: str, default: Any = _MISSING) -> Any:
        return self._get(key, default, bool, "a boolean")

    def number(self, key: str, default: Any = _MISSING) -> Any:
        """A float; an integer is taken as one (a boolean is not)."""
        value = self.data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            self.read.add(key)
            return float(value)
        return self._get(key, default, float, "a number")

    def choice(self, key: str, choices: tuple[str, ...], default: Any = _MISSING) -> Any:
        value = self.string(key, default)
        if value is not None and value not in choices:
            raise self.error(
                "bad_value", key, f"{value!r} is not one of {', '.join(map(repr, choices))}"
            )
        return value

    def slug(self, key: str, default: Any = _MISSING) -> Any:
        value = self.string(key, default)
        if value is not None and not SLUG.match(value):
            raise self.error(
                "bad_value",
                key,
                f"{value!r} is not a slug (lower-case letters, digits, '.', '_', '-'; "
                "at most 64 characters, starting and ending with a letter or digit)",
            )
        return value

    def path(self, key: str, default: Any = _MISSING) -> Any:
        value = self.string(key, default)
        if value is None:
            return None
        return check_relative_path(value, file=self.file, field=self.field(key))

    def str_list(self, key: str, default: Any = _MISSING) -> Any:
        values = self._get(key, default, list, "an array of strings")
        if values is None:
            return None
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise BundleError(
                    "wrong_type",
                    f"expected a string, got {type_name(value)}",
                    file=self.file,
                    field=f"{self.field(key)}[{i}]",
                )
        return tuple(values)

    def path_list(self, key: str, default: Any = _MISSING) -> Any:
        """An array of paths the manifest may name (each checked as `path` checks one)."""
        values = self.str_list(key, default)
        if values is None:
            return None
        return tuple(check_relative_path(value, file=self.file, field=f"{self.field(key)}[{i}]")
                     for i, value in enumerate(values))

    def int_list(self, key: str, default: Any = _MISSING) -> Any:
        values = self._get(key, default, list, "an array of integers")
        if values is None:
            return None
        for i, value in enumerate(values):
            if not isinstance(value, int) or isinstance(value, bool):
                raise BundleError(
                    "wrong_type",
                    f"expected an integer, got {type_name(value)}",
                    file=self.file,
                    field=f"{self.field(key)}[{i}]",
                )
        return tuple(values)

    def number_list(self, key: str, default: Any = _MISSING) -> Any:
        """An array of floats (an integer is taken as one, a boolean is not)."""
        values = self._get(key, default, list, "an array of numbers")
        if values is None:
            return None
        for i, value in enumerate(values):
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise BundleError(
                    "wrong_type",
                    f"expected a number, got {type_name(value)}",
                    file=self.file,
                    field=f"{self.field(key)}[{i}]",
                )
        return tuple(float(v) for v in values)

    def table(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default, dict, "a table")
        if value is None:
            return None
        return Table(value, file=self.file, prefix=self.field(key))

    def tables(self, key: str) -> list[tuple[int, Mapping[str, Any]]]:
        """An array of tables (`[[key]]`); at least one."""
        values = self._get(key, _MISSING, list, "an array of tables")
        if not values:
            raise self.error("missing_field", key, "declare at least one")
        for i, value in enumerate(values):
            if not isinstance(value, dict):
                raise BundleError(
                    "wrong_type",
                    f"expected a table, got {type_name(value)}",
                    file=self.file,
                    field=f"{self.field(key)}[{i}]",
                )
        return list(enumerate(values))

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.read)
        if unknown:
            raise self.error(
                "unknown_field", unknown[0], f"unknown field {unknown[0]!r} (see docs/bundles.md)"
            )
