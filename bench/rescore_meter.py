"""What bench/rescore.py counts while re-scoring: database queries, stored files opened,
bytes read from them, and compact arrays decoded whole. These counts do not depend on how
busy the machine is, so they are what its guard (--mid, run by CI) compares with a budget
per re-scored submission; the timings beside them are printed, never judged there.

Counted in this process only: run what is metered with EVALSERVER_RESCORE_PROCESSES=1 (the
forked scoring processes of rescoring/pool.py build their own storage and count nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class Counts:
    queries: int = 0
    opens: int = 0
    bytes: int = 0
    decodes: int = 0

    def per(self, n: int) -> dict[str, float]:
        return {name: value / n for name, value in vars(self).items()}


class _CountingFile:
    """A stored file that adds what is read from it to `counts.bytes`."""

    def __init__(self, inner: Any, counts: Counts) -> None:
        self._inner, self._counts = inner, counts

    def read(self, *args: Any) -> bytes:
        data = self._inner.read(*args)
        self._counts.bytes += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        n = self._inner.readinto(buffer)
        self._counts.bytes += n or 0
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> _CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()


@contextmanager
def metered() -> Iterator[Counts]:
    """Count, inside the block, the queries on the default database, the opens of and bytes
    read from the default storage (the compact arrays), and the whole compact arrays
    decoded (rescoring/pool.compact_predictions)."""
    from django.core.files.storage import default_storage
    from django.db import connection

    from leaderboard.review.rescoring import pool

    counts = Counts()
    default_storage.exists("")  # the lazy default storage built, so its instance is patched
    storage = default_storage._wrapped
    real_open, real_decode = storage.open, pool.compact_predictions

    def counting_open(name: str, mode: str = "rb") -> Any:
        counts.opens += 1
        return _CountingFile(real_open(name, mode), counts)

    def counting_decode(name: str, example_set: str) -> Any:
        counts.decodes += 1
        return real_decode(name, example_set)

    def counting_query(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        counts.queries += 1
        return execute(sql, params, many, context)

    storage.open = counting_open
    pool.compact_predictions = counting_decode
    try:
        with connection.execute_wrapper(counting_query):
            yield counts
    finally:
        del storage.open
        pool.compact_predictions = real_decode
