"""Per-example hits and the records built from them: the parts every family's metric is made
of (workers/scoring/families). Pair keys are `example * num_classes + class` (sorted, unique
int64), so membership for 50,000 predictions is one lookup.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from .label_set_builders import CompiledLabelSet
from .predictions import Predictions
from .stats import accuracy_record

Record = dict[str, Any]
# Probabilities are clipped here before the log so one confident zero is a large, finite loss.
CROSS_ENTROPY_EPS = 1e-12


@dataclass(frozen=True, eq=False)
class NovelPairs:
    """Top-1 (example, class) pairs that no human has judged on a label set."""

    examples: np.ndarray  # int64 [m]
    classes: np.ndarray  # int64 [m]
    scores: np.ndarray | None  # float32 [m] top-1 scores, when the submission gave scores

    def __len__(self) -> int:
        return int(self.examples.size)


def in_keys(
    sorted_keys: np.ndarray, examples: np.ndarray, classes: np.ndarray, num_classes: int
) -> np.ndarray:
    """Membership of (example, class) pairs in a sorted key array, vectorised."""
    query = examples.astype(np.int64) * num_classes
    query += classes  # int64 += any integer dtype: no temporary copy of the classes
    if sorted_keys.size == 0:
        return np.zeros(query.shape, dtype=bool)
    if query.size >= _BITMAP_MIN_QUERIES and not sorted_keys.flags.writeable:
        bitmap = _bitmap(sorted_keys)
        if bitmap is not None:
            return _bitmap_lookup(bitmap, query)
    pos = np.searchsorted(sorted_keys, query)
    pos[pos == sorted_keys.size] = 0
    return sorted_keys[pos] == query


# A whole-example-set query (50,000 pairs) costs ~1 ms as a binary search but ~0.1 ms as a bit
# lookup; re-scoring 10,000 submissions makes four such queries each. The bitmaps are built
# once per key array, only for read-only arrays (compiled label sets), so they cannot go stale.
_BITMAP_MIN_QUERIES = 4096
_BITMAP_MAX_BYTES = 64 * 2**20
_BITMAPS: dict[int, tuple[weakref.ref[np.ndarray], np.ndarray]] = {}


def _bitmap_lookup(bitmap: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Bit `query` of the bitmap. Valid predictions (every class id below num_classes, the
    usual case) all fall inside it, and are looked up without masks or copies in int32 when
    the keys fit: half the memory traffic, re-scoring's largest per-submission cost."""
    limit = bitmap.size * 8
    if query.size == 0 or int(query.min()) < 0 or int(query.max()) >= limit:
        inside = (query >= 0) & (query < limit)
        found = np.zeros(query.shape, dtype=bool)
        q = query[inside]
        found[inside] = (bitmap[q >> 3] >> (q & 7).astype(np.uint8)) & 1 == 1
        return found
    if limit <= np.iinfo(np.int32).max:
        query = query.astype(np.int32)
    bits = bitmap[query >> 3]
    bits >>= (query & 7).astype(np.uint8)
    bits &= 1
    return bits.view(bool)


def _bitmap(sorted_keys: np.ndarray) -> np.ndarray | None:
    cached = _BITMAPS.get(id(sorted_keys))
    if cached is not None and cached[0]() is sorted_keys:
        return cached[1]
    top = int(sorted_keys[-1])
    if int(sorted_keys[0]) < 0 or top // 8 + 1 > _BITMAP_MAX_BYTES:
        return None
    # Set the bits byte by byte from the sorted keys (OR-ing the bits that share a byte):
    # no bool array of every possible key (50 MB for ImageNet) to allocate, fill and pack.
    keys = sorted_keys.astype(np.int64, copy=False)
    byte = keys >> 3
    bits = np.left_shift(1, keys & 7).astype(np.uint8)
    starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
    bitmap = np.zeros(top // 8 + 1, dtype=np.uint8)
    bitmap[byte[starts]] = np.bitwise_or.reduceat(bits, starts)
    key = id(sorted_keys)
    _BITMAPS[key] = (weakref.ref(sorted_keys, lambda _ref: _BITMAPS.pop(key, None)), bitmap)
    return bitmap


def hits_record(hits: np.ndarray, mask: np.ndarray | None = None) -> Record:
    if mask is not None:
        hits = hits[mask]
    return accuracy_record(int(np.count_nonzero(hits)), int(hits.size))


def topk_hits(topk: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray | None:
    if topk.shape[1] < k:
        return None
    return (topk[:, :k] == labels[:, None]).any(axis=1)


def topk_record(
    topk: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None, k: int = 5
) -> Record | None:
    hits = topk_hits(topk, labels, k)
    return None if hits is None else hits_record(hits, mask)


def novel_pairs(ls: CompiledLabelSet, preds: Predictions, known: np.ndarray) -> NovelPairs:
    examples = np.flatnonzero(ls.arrays["mask"] & ~known)
    classes = preds.topk[examples, 0].astype(np.int64)
    scores = None if preds.topk_scores is None else preds.topk_scores[examples, 0]
    return NovelPairs(examples.astype(np.int64), classes, scores)


def judged_pairs(
    ls: CompiledLabelSet, examples: np.ndarray, classes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    accepted = in_keys(ls.arrays["accepted_keys"], examples, classes, ls.num_classes)
    wrong = in_keys(ls.arrays["wrong_keys"], examples, classes, ls.num_classes)
    return accepted, accepted | wrong
