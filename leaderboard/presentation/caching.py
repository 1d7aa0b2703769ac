"""Rendered leaderboards (JSON bodies, HTML table fragments) kept in Django's cache.

Why a stale copy is never served, in any process: every key holds the benchmark's
`leaderboard_generation`, read from the database on each request (one cheap query), and every
write that can change a leaderboard (a submission scored, one turning public or private, a new
label-set version) bumps that number in the database
(`catalog.services.benchmark_leaderboard_touch`).
After a bump every process asks for a key nobody has built yet, so nothing has to be deleted or
broadcast: with a per-process cache (LocMemCache, the default) or a shared one (Redis), the old
entries just age out. This is the same scheme as `boards.selectors.leaderboard_get`.
The generation is read before the rows, and the bump commits with the change it announces, so
a body stored under generation G never predates G (at worst a body under G already shows the
change that made G+1, and G+1 is built afresh anyway).

Keys also name the format of what they hold (`source_format`): a digest of the source of the
code and templates that build it, so a release that changes the JSON shape, a template or a
chart's drawing asks for keys no older release wrote, and a shared cache never serves it an
older body. Nobody bumps a version by hand.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from django.core.cache import cache
from django.template.loader import get_template

RENDER_TIMEOUT = 3600  # seconds; the generation, not the timeout, is what keeps entries fresh
_SAFE_KEY = re.compile(r"[A-Za-z0-9_.:\-]{1,200}")

Body = TypeVar("Body", bytes, str)


def render_key(key_parts: Iterable[object]) -> str:
    """`render:<parts joined by :>`; a digest of them when a part holds characters a cache
    backend may refuse (the sort and version parts come from the query string)."""
    parts = tuple(key_parts)
    joined = ":".join("" if part is None else str(part) for part in parts)
    if _SAFE_KEY.fullmatch(joined):
        return f"render:{joined}"
    return "render:sha256:" + hashlib.sha256(repr(parts).encode()).hexdigest()


def cached_render(key_parts: Iterable[object], build: Callable[[], Body]) -> Body:
    """The cached body for these key parts, or `build()`'s, stored for the next request.

    `key_parts` must name everything the body depends on, the benchmark's leaderboard
    generation included. An exception from `build` (e.g. an unknown sort) caches nothing."""
    key = render_key(key_parts)
    body: Body | None = cache.get(key)
    if body is None:
        body = build()
        cache.set(key, body, timeout=RENDER_TIMEOUT)
    return body


def _module_source(module: str) -> bytes:
    """The source file of a module, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise LookupError(f"no source for module {module!r}")
    return Path(spec.origin).read_bytes()


def _template_source(name: str) -> bytes:
    """The text of a template, as Django's loaders find it."""
    return str(get_template(name).template.source).encode()  # type: ignore[attr-defined]


def sources_digest(sources: Iterable[tuple[str, bytes]]) -> str:
    """A short digest of named texts: it changes when any text or name does."""
    digest = hashlib.sha256()
    for name, text in sources:
        for part in (name.encode(), text):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return digest.hexdigest()[:16]


@functools.cache
def source_format(*, modules: tuple[str, ...] = (), templates: tuple[str, ...] = ()) -> str:
    """The cache format of values built by these modules with these templates: the digest of
    their source, computed once per process. Name every module and template whose change can
    change the cached value (the builder, the serializer, the filters a template loads)."""
    return sources_digest([*((m, _module_source(m)) for m in modules),
                           *((t, _template_source(t)) for t in templates)])
