"""The packed hit vectors of a label-set version's board rows, kept by each worker process
(docs/metrics.md §10.4): the refresh after one scoring reads the one new vector from the
database, not all of them (10,000 ImageNet rows are 62 MB).

Nothing is shared between processes or hosts: a process without the version's vectors (just
started, or evicted) reads them from the database, and a vector is found by its digest (the
SHA-256 of its bits, HitVector), so what it holds is never stale, only incomplete.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from leaderboard.submissions.models import HitVector
from workers.scoring.significance.update import HitMatrix

_CHUNK = 2_000  # digests per query


@dataclass
class VersionHits:
    """One version's vectors: those of the matrix's width in `matrix`, and of each vector
    read its (length in bytes, examples it marks correct). One not in the database is not
    remembered: it is looked for again next time."""

    matrix: HitMatrix
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)


_CACHE: OrderedDict[int, VersionHits] = OrderedDict()


def _read(digests: Collection[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    ordered = sorted(digests)
    for at in range(0, len(ordered), _CHUNK):
        found.update((d, bytes(b)) for d, b in HitVector.objects.filter(
            digest__in=ordered[at:at + _CHUNK]).values_list("digest", "bits"))
    return found


def version_hits(*, version_id: int, digests: Collection[str], width: int) -> VersionHits:
    """The vectors of `digests` on this version (those of `width` bytes in the matrix),
    reading from the database only those this process has not seen."""
    if not digests:
        return VersionHits(HitMatrix(width))  # an empty board: nothing to keep
    held = _CACHE.get(version_id)
    if held is not None and (held.matrix.width != width
                             or len(held.matrix) > 2 * len(digests) + 256):
        held = None  # another width, or mostly rows gone from the board: start afresh
    if held is None:
        held = VersionHits(HitMatrix(width))
    missing = [d for d in digests if d not in held.seen]
    if missing:
        found = _read(missing)
        held.matrix.add(found.items())
        for digest, vector in found.items():
            held.seen[digest] = (len(vector),
                                 int(np.bitwise_count(np.frombuffer(vector, np.uint8)).sum()))
    _CACHE[version_id] = held
    _CACHE.move_to_end(version_id)
    # Versions kept while they fit EVALSERVER_SIGNIFICANCE_CACHE_MB (an ImageNet board of
    # 10,000 rows is 62 MB), least recently used dropped first, this one always kept; a
    # matrix whose rows are mostly vectors no longer on the board is rebuilt (above).
    budget = settings.EVALSERVER_SIGNIFICANCE_CACHE_MB * 2**20
    while len(_CACHE) > 1 and sum(h.matrix.nbytes for h in _CACHE.values()) > budget:
        _CACHE.popitem(last=False)
    return held


def hits_forget() -> None:
    """Drop every version held (tests)."""
    _CACHE.clear()
