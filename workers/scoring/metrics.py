"""Every metric of docs/metrics.md §2 to §8 for one submission: one function per family.

Each family function takes a compiled label set and the submission's predictions on that
label set's image set, and returns a JSON-able record whose headline fields are
`accuracy, correct, total, ci_low, ci_high` (the shape of `stats.accuracy_record`), plus the
family's extra figures; ReaL and multi-label also return their novel (example, class) pairs.
Leaderboard-wide figures (ranks, the linear fit, curve crossings) live in `leaderboard.py`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .bundles import builtin_bundle, builtin_slugs
from .bundles.examples import ExampleNames
from .label_set_builders import CompiledLabelSet
from .multilabel import organism_mask
from .predictions import Predictions
from .stats import accuracy_record, class_mean_record, mean_record

Record = dict[str, Any]
# Example index -> the name shown for it (a file name): the example set's naming, which the
# caller knows (the database on the web side, the bundle in `python -m workers.score`).
ExampleNamer = Callable[[int], str]
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


@dataclass(frozen=True)
class SubmissionScores:
    records: dict[str, Record]  # label set slug -> record
    novel: dict[str, NovelPairs] = field(default_factory=dict)
    hits: dict[str, np.ndarray] = field(default_factory=dict)  # slug -> `headline_hits`


def in_keys(
    sorted_keys: np.ndarray, examples: np.ndarray, classes: np.ndarray, num_classes: int
) -> np.ndarray:
    """Membership of (example, class) pairs in a sorted key array, vectorised."""
    query = examples.astype(np.int64) * num_classes + classes.astype(np.int64)
    if sorted_keys.size == 0:
        return np.zeros(query.shape, dtype=bool)
    if query.size >= _BITMAP_MIN_QUERIES and not sorted_keys.flags.writeable:
        bitmap = _bitmap(sorted_keys)
        if bitmap is not None:
            inside = (query >= 0) & (query < bitmap.size * 8)
            found = np.zeros(query.shape, dtype=bool)
            q = query[inside]
            found[inside] = (bitmap[q >> 3] >> (q & 7).astype(np.uint8)) & 1 == 1
            return found
    pos = np.searchsorted(sorted_keys, query)
    pos[pos == sorted_keys.size] = 0
    return sorted_keys[pos] == query


# A whole-image-set query (50,000 pairs) costs ~1 ms as a binary search but ~0.1 ms as a bit
# lookup; re-scoring 10,000 submissions makes four such queries each. The bitmaps are built
# once per key array, only for read-only arrays (compiled label sets), so they cannot go stale.
_BITMAP_MIN_QUERIES = 4096
_BITMAP_MAX_BYTES = 64 * 2**20
_BITMAPS: dict[int, tuple[weakref.ref[np.ndarray], np.ndarray]] = {}


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


def _hits_record(hits: np.ndarray, mask: np.ndarray | None = None) -> Record:
    if mask is not None:
        hits = hits[mask]
    return accuracy_record(int(np.count_nonzero(hits)), int(hits.size))


def _topk_hits(topk: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray | None:
    if topk.shape[1] < k:
        return None
    return (topk[:, :k] == labels[:, None]).any(axis=1)


def _topk_record(
    topk: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None, k: int = 5
) -> Record | None:
    hits = _topk_hits(topk, labels, k)
    return None if hits is None else _hits_record(hits, mask)


def score_single(ls: CompiledLabelSet, preds: Predictions) -> Record:
    """docs/metrics.md §2 and §8: top-1 and top-5 against one label per example, all examples."""
    labels = ls.arrays["labels"]
    record = _hits_record(preds.topk[:, 0] == labels)
    record["top5"] = _topk_record(preds.topk, labels)
    return record


def score_corrected(ls: CompiledLabelSet, preds: Predictions) -> Record:
    """docs/metrics.md §3: corrected accuracy over the pruned set P; Acc@1 and cAcc@1 on the
    correctable C."""
    a = ls.arrays
    pruned, correctable = a["pruned"], a["correctable"]
    top1 = preds.topk[:, 0]
    hit_corrected = top1 == a["corrected_labels"]
    hit_original = top1 == a["labels"]
    record = _hits_record(hit_corrected, pruned)
    record["top5"] = _topk_record(preds.topk, a["corrected_labels"], pruned)
    rest = pruned & ~correctable  # B = P minus C, where corrected == original
    acc1 = _hits_record(hit_original, correctable)
    cacc1 = _hits_record(hit_corrected, correctable)
    acc_b = _hits_record(hit_original, rest)
    record["correctable"] = {"acc1": acc1, "cacc1": cacc1}
    record["noise_prevalence"] = {
        "n_c": acc1["total"],
        "n_b": acc_b["total"],
        "acc_c_original": acc1["accuracy"],
        "acc_c_corrected": cacc1["accuracy"],
        "acc_b": acc_b["accuracy"],
    }
    record["original_on_pruned"] = _hits_record(hit_original, pruned)
    return record


def _novel(ls: CompiledLabelSet, preds: Predictions, known: np.ndarray) -> NovelPairs:
    examples = np.flatnonzero(ls.arrays["mask"] & ~known)
    classes = preds.topk[examples, 0].astype(np.int64)
    scores = None if preds.topk_scores is None else preds.topk_scores[examples, 0]
    return NovelPairs(examples.astype(np.int64), classes, scores)


def _judged(
    ls: CompiledLabelSet, examples: np.ndarray, classes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    accepted = in_keys(ls.arrays["accepted_keys"], examples, classes, ls.num_classes)
    wrong = in_keys(ls.arrays["wrong_keys"], examples, classes, ls.num_classes)
    return accepted, accepted | wrong


def score_real(ls: CompiledLabelSet, preds: Predictions) -> tuple[Record, NovelPairs]:
    """docs/metrics.md §4: top-1 in the ReaL list, over images with a non-empty list; 2nd and
    3rd too."""
    mask = ls.arrays["mask"]
    examples = np.arange(ls.size)
    accepted, judged = _judged(ls, examples, preds.topk[:, 0])
    record = _hits_record(accepted, mask)
    for position, name in ((1, "second"), (2, "third")):
        if preds.k > position:
            hit = in_keys(
                ls.arrays["accepted_keys"], examples, preds.topk[:, position], ls.num_classes
            )
            record[name] = _hits_record(hit, mask)
        else:
            record[name] = None
    novel = _novel(ls, preds, judged)
    record["novel_count"] = len(novel)
    return record, novel


def score_multilabel(ls: CompiledLabelSet, preds: Predictions) -> tuple[Record, NovelPairs]:
    """docs/metrics.md §5: correct if in correct + unclear; the accuracy is the mean of the
    per-class accuracies, classes keyed by the original label (the pooled share of images
    too); class-collapse variant; organism/object split (means over those classes)."""
    a = ls.arrays
    if "original_labels" not in a:
        raise ValueError(
            f"label set {ls.slug!r} lacks 'original_labels' (compiled by an older builder): "
            "the class-mean accuracy needs them; `manage.py scores_recompute` upgrades it")
    mask = a["mask"]
    examples = np.arange(ls.size)
    top1 = preds.topk[:, 0]
    accepted, judged = _judged(ls, examples, top1)
    collapsed = in_keys(a["collapsed_keys"], examples, top1, ls.num_classes)
    classes = a["original_labels"][mask]
    organism = organism_mask()
    hits = accepted[mask]

    def mean(hit: np.ndarray, among: np.ndarray | None = None) -> Record:
        return class_mean_record(hit, classes, num_classes=ls.num_classes, among=among)

    record = mean(hits)
    record["collapsed"] = mean(collapsed[mask])
    record["organism"] = mean(hits, organism)
    record["object"] = mean(hits, ~organism)
    novel = _novel(ls, preds, judged)
    record["novel_count"] = len(novel)
    return record, novel


@lru_cache(maxsize=64)
def default_example_namer(image_set: str) -> ExampleNamer:
    """The names of an example set when the caller gives none: a built-in benchmark's example
    set is named as its bundle names it where that needs no file (ImageNet's file-number
    pattern: ILSVRC2012_val_00000001.JPEG), any other `<slug>[i]` (docs/bundles.md §4)."""
    for slug in builtin_slugs():
        for example_set in builtin_bundle(slug).example_sets:
            if example_set.slug == image_set and example_set.naming != "file":
                return ExampleNames(example_set, Path()).name
    return lambda index: f"{image_set}[{index}]"


def score_imagenet_m(
    ls: CompiledLabelSet, preds: Predictions, class_names: tuple[str, ...] | None = None,
    example_name: ExampleNamer | None = None,
) -> Record:
    """docs/metrics.md §6: correct out of the 68 listed images, and the misses (named by
    `example_name`, default `default_example_namer`)."""
    name = example_name or default_example_namer(ls.image_set)
    examples = np.flatnonzero(ls.arrays["mask"])
    top1 = preds.topk[examples, 0]
    accepted, _ = _judged(ls, examples, top1)
    record = _hits_record(accepted)
    record["misses"] = [
        {
            "index": int(i),
            "file": name(int(i)),
            "predicted": int(c),
            **({"predicted_name": class_names[int(c)]} if class_names else {}),
        }
        for i, c in zip(examples[~accepted], top1[~accepted], strict=True)
    ]
    return record


def score_cifar10h(ls: CompiledLabelSet, preds: Predictions) -> Record:
    """docs/metrics.md §7: plurality accuracy (headline), human agreement, cross-entropy if
    probabilities."""
    probs = ls.arrays["probs"]
    rows = np.arange(ls.size)
    top1 = preds.topk[:, 0]
    human_prob = probs[rows, top1]
    # A prediction of any class tied for the most human votes counts as the plurality.
    record = _hits_record(human_prob == probs.max(axis=1))
    record["human_agreement"] = mean_record(human_prob)
    record["cross_entropy"] = None
    if preds.scores is not None and preds.scores_kind == "probabilities":
        model = np.clip(preds.scores.astype(np.float64), CROSS_ENTROPY_EPS, 1.0)
        record["cross_entropy"] = mean_record(-(probs * np.log(model)).sum(axis=1))
    return record


def headline_hits(ls: CompiledLabelSet, preds: Predictions) -> np.ndarray:
    """Whether each evaluated example counts as correct in the headline accuracy (top-1, or
    plurality for CIFAR-10H): exactly the examples counted in the record's `total`, in the
    order of `label_set_builders.evaluated_mask(ls)`, so `hits.sum() == record["correct"]`. The
    paired tests between submissions (ties.py) compare these vectors."""
    if preds.num_examples != ls.size:
        raise ValueError(f"{ls.image_set}: {preds.num_examples} predictions for {ls.size} examples")
    a = ls.arrays
    top1 = preds.topk[:, 0]
    if ls.family in ("original", "new_test_set"):  # all examples, as score_single
        return np.asarray(top1 == a["labels"])
    if ls.family == "corrected":  # the pruned set P, as score_corrected
        return np.asarray((top1 == a["corrected_labels"])[a["pruned"]])
    if ls.family == "cifar10h":  # all examples, plurality as score_cifar10h
        probs = a["probs"]
        return np.asarray(probs[np.arange(ls.size), top1] == probs.max(axis=1))
    if ls.family in ("real", "multilabel", "imagenet_m"):  # the inclusion mask
        examples = np.flatnonzero(a["mask"])
        return in_keys(a["accepted_keys"], examples, top1[examples], ls.num_classes)
    raise ValueError(f"no metric for label-set family {ls.family!r}")


def score_label_set(
    ls: CompiledLabelSet, preds: Predictions, *, class_names: tuple[str, ...] | None = None,
    example_name: ExampleNamer | None = None,
) -> tuple[Record, NovelPairs | None]:
    """The record (and novel pairs, for ReaL and multi-label) of one label set.

    class_names (id order) and example_name (index -> name) are the benchmark's, for the
    records that show examples (ImageNet-M's misses); example_name defaults to
    `default_example_namer(ls.image_set)`."""
    if preds.num_examples != ls.size:
        raise ValueError(f"{ls.image_set}: {preds.num_examples} predictions for {ls.size} examples")
    novel: NovelPairs | None = None
    simple: dict[str, Callable[[CompiledLabelSet, Predictions], Record]] = {
        "original": score_single,
        "new_test_set": score_single,
        "corrected": score_corrected,
        "cifar10h": score_cifar10h,
    }
    if ls.family in simple:
        record = simple[ls.family](ls, preds)
    elif ls.family == "real":
        record, novel = score_real(ls, preds)
    elif ls.family == "multilabel":
        record, novel = score_multilabel(ls, preds)
    elif ls.family == "imagenet_m":
        record = score_imagenet_m(ls, preds, class_names, example_name)
    else:
        raise ValueError(f"no metric for label-set family {ls.family!r}")
    header = {
        "label_set": ls.slug,
        "image_set": ls.image_set,
        "family": ls.family,
        "version_hash": ls.content_hash,
    }
    return {**header, **record}, novel


def score_predictions(
    predictions: Mapping[str, Predictions],
    label_sets: Iterable[CompiledLabelSet],
    *,
    class_names: tuple[str, ...] | None = None,
    example_names: Mapping[str, ExampleNamer] | None = None,
) -> SubmissionScores:
    """Score predictions (image set slug -> Predictions) on every label set they cover.

    example_names: image set slug -> its namer (`score_label_set`'s example_name); an image
    set it leaves out gets `default_example_namer`.

    New test sets also get `gap` = original accuracy - new accuracy when the submission has
    predictions on the benchmark's original image set.
    """
    records: dict[str, Record] = {}
    novel: dict[str, NovelPairs] = {}
    hits: dict[str, np.ndarray] = {}
    for ls in label_sets:
        if ls.image_set not in predictions:
            continue
        record, pairs = score_label_set(
            ls, predictions[ls.image_set], class_names=class_names,
            example_name=(example_names or {}).get(ls.image_set))
        records[ls.slug] = record
        hits[ls.slug] = headline_hits(ls, predictions[ls.image_set])
        if pairs is not None:
            novel[ls.slug] = pairs
    original = records.get("original", {}).get("accuracy")
    for record in records.values():
        if record["family"] == "new_test_set":
            new = record["accuracy"]
            record["gap"] = None if original is None or new is None else original - new
    return SubmissionScores(records, novel, hits)
