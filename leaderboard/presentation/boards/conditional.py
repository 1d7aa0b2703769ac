"""Conditional GETs of a board (docs/api.md §5.2, "Caching"): its ETag and the 304 answer.

A board's bytes depend on the benchmark's `leaderboard_generation` (bumped by every write that
can change a board, leaderboard/presentation/caching.py), on the format of the code that
builds them (`caching.source_format`: a release that changes the shape changes it) and on the
URL (sort, version, page). So an ETag of (format, benchmark, generation) names the bytes of
every board URL exactly, and is known from the one small query for the benchmark row: a
revalidation answers 304 before any board is built or read from the cache.

Cache-Control is `no-cache`: a client or proxy may keep the answer but must revalidate each
time, so a newly scored submission shows at once, and a revalidation costs one query.
"""

from __future__ import annotations

from typing import TypeVar

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.http import parse_etags

from leaderboard.catalog.models import Benchmark

# The API's JSON and CSV are the same for every caller (public, anonymous reads).
PUBLIC_CACHE_CONTROL = "public, no-cache"
# An HTML page holds its visitor's navigation (name, forms): browsers only, never a proxy.
PRIVATE_CACHE_CONTROL = "private, no-cache"


def board_etag(*, benchmark: Benchmark, format: str, variant: str = "") -> str:
    """The quoted strong ETag of a board answer (the URL says which board and page)."""
    return f'"{format}-{benchmark.pk}-{benchmark.leaderboard_generation}{variant}"'


def etag_matches(*, request: HttpRequest, etag: str) -> bool:
    """Whether If-None-Match names `etag`: the weak comparison RFC 9110 §13.1.2 prescribes
    for If-None-Match (`W/"x"` matches `"x"`), a list of tags, or `*`."""
    header = request.META.get("HTTP_IF_NONE_MATCH")
    if not header:
        return False
    tags = parse_etags(header)
    return "*" in tags or any(tag.removeprefix("W/") == etag for tag in tags)


Response = TypeVar("Response", HttpResponse, StreamingHttpResponse)


def conditional_headers_add(response: Response, *, etag: str | None,
                            cache_control: str) -> Response:
    if etag is not None:
        response["ETag"] = etag
    response["Cache-Control"] = cache_control
    return response


def not_modified(*, etag: str, cache_control: str) -> HttpResponse:
    """304: no body; the validator and caching rules as the 200 would send them."""
    return conditional_headers_add(HttpResponse(status=304), etag=etag,
                                   cache_control=cache_control)
