"""The slugs of benchmarks, label sets and example sets in URLs: `<catalog_slug:slug>`.

A path parameter that is not such a slug does not resolve, so the answer is the 404 of an
unknown URL (leaderboard/common/error_pages.py: the API's error shape under /api/) and no
view ever queries the database with it: PostgreSQL refuses a NUL byte in a text value, and
a `<str:...>` parameter carried one into a query (a 500).
"""

from __future__ import annotations

from django.urls import register_converter

# The length of every slug column of the catalog (leaderboard/catalog/models.py).
SLUG_MAX_LENGTH = 64
# The rule the bundle reader enforces on every slug of a manifest
# (workers/scoring/bundles/fields.py, SLUG; tests/common/test_url_parameters.py checks they agree):
# lower-case letters, digits, '.', '_', '-', starting and ending with a letter or digit. Dots
# are allowed (`cifar10.1-v6`), which Django's own `<slug:...>` refuses.
SLUG_PATTERN = rf"[a-z0-9](?:[a-z0-9._-]{{0,{SLUG_MAX_LENGTH - 2}}}[a-z0-9])?"
CONVERTER_NAME = "catalog_slug"


class CatalogSlugConverter:
    regex = SLUG_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


# At import: both URLconfs import this module before they name the converter.
register_converter(CatalogSlugConverter, CONVERTER_NAME)

# A username in a URL (`<username:username>`, a team's member): what Django's username
# validator takes (letters, digits and @ . + - _, at most 150), but not starting with a dot,
# so that `.` and `..` are no username. No lookahead nor alternation: the schema publishes it
# as an OpenAPI (ECMA 262) pattern, which drf-spectacular wraps in ^...$.
USERNAME_PATTERN = r"[\w@+-][\w.@+-]{0,149}"


class UsernameConverter:
    regex = USERNAME_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(UsernameConverter, "username")
