"""Reads for the about page's confusions (docs/metrics.md §6.1): the class pairs an expert
panel's model confused most, from the file the benchmark's bundle names (`class_confusions`,
docs/bundles.md §2; ImageNet's `imagenet/mistakes/class_confusion_wnids.json` of Vasudevan et
al. 2022), beside the confusions most common among this server's public scored
submissions on the corrected labels.

A confusion is an unordered class pair {corrected label, top-1 prediction}, counted once per
example of the pruned set P (docs/metrics.md §3.2) where the two differ, summed over
submissions; the panel's file counts unordered pairs too. Counting reads every submission's
stored top-1, so the sums are kept in Django's cache per corrected-label version and grow by
the newly scored submissions only: a request reads no file unless a submission was scored (or
turned public) since the last one, and recounts everything only when one left the board.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache

from leaderboard.catalog.label_set_version_files import LabelStoreError, compiled_for_version
from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.selectors import (
    benchmark_class_names,
    label_set_correctable_slug,
    label_set_version_current,
)
from leaderboard.review.selectors import ClassLabel
from leaderboard.submissions.models import Submission, SubmissionFile
from leaderboard.submissions.stored_files import stored_compact
from workers.scoring import datasets
from workers.scoring.families.registry import FAMILIES

logger = logging.getLogger(__name__)

TOP_CONFUSIONS = 15
STATE_TIMEOUT = 7 * 24 * 3600  # seconds; a stale state is never used (the key names its inputs)

# The families whose labels a ground-truth panel corrects: "ours" counts their corrections.
GROUND_TRUTH_FAMILIES = [name for name, f in FAMILIES.items() if f.apply_ground_truth is not None]


@dataclass(frozen=True)
class Confusion:
    first: ClassLabel
    second: ClassLabel
    count: int  # panel: times the panel's model confused them; ours: examples, over submissions
    submissions: int = 0  # ours: submissions that confuse them at least once
    ours: int = 0  # panel pairs: the same pair's count among our submissions
    in_panel: bool = False  # our pairs: the panel's model confused them too


@dataclass(frozen=True)
class BenchmarkConfusions:
    panel: list[Confusion]  # most confused first; empty without the panel's file
    panel_pairs: int  # pairs in the panel's file
    ours: list[Confusion]  # most common first
    submissions: int  # public scored submissions counted
    label_set: str  # the corrected label set counted on
    version: int | None


def _label(names: tuple[str, ...], class_id: int) -> ClassLabel:
    return ClassLabel(class_id, names[class_id] if 0 <= class_id < len(names) else str(class_id))


@lru_cache(maxsize=4)
def _panel_pairs(path: str, modified: int,
                 class_keys: tuple[str, ...]) -> tuple[tuple[int, int, int], ...]:
    """(class a < class b, times) per pair of the panel's file, most confused first; () when
    the file does not have the published layout (logged)."""
    try:
        rows = datasets.read_json(Path(path))
        index = {key: i for i, key in enumerate(class_keys)}
        pairs = []
        for first, second, times in rows:
            a, b = sorted((index[first], index[second]))
            pairs.append((a, b, int(times)))
    except (OSError, ValueError, KeyError, TypeError, datasets.DataError) as exc:
        logger.warning("cannot read the panel's confusions %s: %s", path, exc)
        return ()
    return tuple(sorted(pairs, key=lambda p: (-p[2], p[0], p[1])))


def panel_confusions(*, benchmark: Benchmark) -> tuple[tuple[int, int, int], ...]:
    """The expert panel's confused class pairs, by the class keys of the file the benchmark's
    bundle names; () when it names none, its classes have no keys, or the file is missing."""
    if not benchmark.class_confusions or not benchmark.class_keys:
        return ()
    path = Path(settings.EVALSERVER_DATA_DIR) / benchmark.class_confusions
    try:
        modified = path.stat().st_mtime_ns
    except OSError:
        return ()
    return _panel_pairs(str(path), modified, tuple(benchmark.class_keys))


def _submission_pairs(stored: str, example_set: str, labels: np.ndarray, mask: np.ndarray,
                      num_classes: int) -> np.ndarray:
    """One submission's confused pairs (key min * C + max), one entry per example."""
    with stored_compact(stored, example_set=example_set) as arrays:
        top1 = np.asarray(arrays["topk"][:, 0], dtype=np.int64)
    missed = mask & (top1 != labels)
    a, b = labels[missed], top1[missed]
    return np.minimum(a, b) * num_classes + np.maximum(a, b)


def _add(state: dict[str, Any], pairs: list[np.ndarray]) -> dict[str, Any]:
    """The state's sums plus these submissions' pairs (examples, and submissions per pair)."""
    keys = [state["keys"]]
    times = [state["times"]]
    subs = [state["subs"]]
    for submission_pairs in pairs:
        unique, counts = np.unique(submission_pairs, return_counts=True)
        keys.append(unique)
        times.append(counts.astype(np.int64))
        subs.append(np.ones(unique.size, dtype=np.int64))
    merged, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    return {**state, "keys": merged,
            "times": np.bincount(inverse, np.concatenate(times), merged.size).astype(np.int64),
            "subs": np.bincount(inverse, np.concatenate(subs), merged.size).astype(np.int64)}


def _our_sums(label_set: LabelSet, content_hash: str) -> dict[str, Any] | None:
    """{files, keys, times, subs} over the public scored submissions, from the cache, grown
    by the files it has not counted yet; None when the labels cannot be read."""
    files = frozenset(SubmissionFile.objects.filter(
        submission__benchmark_id=label_set.benchmark_id, submission__public=True,
        submission__status=Submission.Status.SCORED, example_set_id=label_set.example_set_id,
    ).exclude(compact="").values_list("id", "compact"))
    key = f"confusions:v1:{label_set.pk}:{content_hash}"
    state: dict[str, Any] | None = cache.get(key)
    if state is not None and state["files"] == files:
        return state
    if state is None or not state["files"] <= files:  # first count, or one left the board
        state = {"files": frozenset(), "keys": np.zeros(0, np.int64),
                 "times": np.zeros(0, np.int64), "subs": np.zeros(0, np.int64)}
    version = label_set_version_current(label_set=label_set)
    if version is None or version.content_hash != content_hash:
        return None
    try:
        arrays = compiled_for_version(version).arrays
    except LabelStoreError:
        return None
    labels = np.asarray(arrays["corrected_labels"], dtype=np.int64)
    mask = np.asarray(arrays["pruned"], dtype=bool)
    num_classes = int(label_set.benchmark.num_classes)
    added = sorted(files - state["files"])
    state = _add(state, [_submission_pairs(name, label_set.example_set.slug, labels, mask,
                                           num_classes)
                         for _, name in added])
    state["files"] = files
    cache.set(key, state, timeout=STATE_TIMEOUT)
    return state


def benchmark_confusions(*, benchmark: Benchmark,
                         limit: int = TOP_CONFUSIONS) -> BenchmarkConfusions | None:
    """The panel's most confused pairs beside ours (on the current version of the benchmark's
    corrected label set, the first of the correctable family: the one the about page
    describes); None when the benchmark has neither."""
    panel = panel_confusions(benchmark=benchmark)
    label_set = (LabelSet.objects.select_related("benchmark")
                 .filter(benchmark=benchmark,
                         slug=label_set_correctable_slug(benchmark_id=benchmark.pk) or "",
                         labels_hidden=False, family__in=GROUND_TRUTH_FAMILIES).first())
    version = None if label_set is None else label_set_version_current(label_set=label_set)
    sums = (None if label_set is None or version is None
            else _our_sums(label_set, version.content_hash))
    if not panel and sums is None:
        return None
    names = benchmark_class_names(benchmark=benchmark)
    c = int(benchmark.num_classes)
    keys = sums["keys"] if sums is not None else np.zeros(0, np.int64)
    times = sums["times"] if sums is not None else np.zeros(0, np.int64)

    def ours_for(a: int, b: int) -> int:
        at = int(np.searchsorted(keys, a * c + b))
        return int(times[at]) if at < keys.size and keys[at] == a * c + b else 0

    panel_keys = {(a, b) for a, b, _ in panel}
    order = np.lexsort((keys, -times))[:limit]  # most common first, then by class ids
    ours = [Confusion(first=_label(names, int(k) // c), second=_label(names, int(k) % c),
                      count=int(times[i]), submissions=int(sums["subs"][i]) if sums else 0,
                      in_panel=(int(k) // c, int(k) % c) in panel_keys)
            for i, k in ((int(i), keys[i]) for i in order)]
    return BenchmarkConfusions(
        panel=[Confusion(first=_label(names, a), second=_label(names, b), count=t,
                         ours=ours_for(a, b)) for a, b, t in panel[:limit]],
        panel_pairs=len(panel), ours=ours,
        submissions=len(sums["files"]) if sums else 0,  # one file per submission
        label_set=label_set.slug if label_set is not None else "",
        version=int(version.number) if version is not None else None)
