"""New label-set versions from settled reviews, and export of a version in its source layout.

Every function is pure: it reads a compiled label set (read-only arrays) and returns a new
one made with `label_set_builders.make_compiled`; the parent is never modified.

- `apply_verdicts`: novel-prediction review (docs/metrics.md §11), with the `revise` step of
  the family: each reviewable family (workers/scoring/families) defines its own beside its
  build (real.py, multilabel.py, subset.py). Pair keys are `example * num_classes + class`
  (sorted, unique int64).
- `apply_ground_truth`: ground-truth review (Northcutt et al.) on a corrected set.

Meta: a revision copies its parent's meta, recomputes the counts the builder writes, and
adds `"revision"` (what this step settled). `label_set_builders.UNHASHED_META_KEYS` keeps `revision`
out of the content hash, so a revision hashes exactly like a from-scratch build of the same
labels (and like its parent when its verdicts change nothing).

Optional arrays, present only once a review has put something in them (so applying no
verdicts, or verdicts that flag nothing, leaves the array set, and the hash, as built):
- real `problematic` (bool[size]): examples excluded by a verdict flagging the ground truth
  as problematic. A built real set has no problematic images, so it has no such array.
- corrected `review_category` (int8[size]): -1 where no ground-truth review has judged the
  example, else the index in `label_set_builders.VOTE_CATEGORIES` of its latest category.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .label_set_builders import (
    VOTE_CATEGORIES,
    CompiledLabelSet,
    corrected_categories,
    make_compiled,
)

VerdictKind = Literal["correct", "wrong", "unclear"]
VERDICTS: tuple[VerdictKind, ...] = ("correct", "wrong", "unclear")
VOTE_KEYS = frozenset({"given", "guessed", "both", "neither"})


@dataclass(frozen=True)
class Verdict:
    """A settled novel-prediction review: the pair (example, class_id) is judged."""

    example: int
    class_id: int
    verdict: VerdictKind
    problematic: bool = False  # the panel flagged the example's ground truth as problematic


@dataclass(frozen=True)
class GroundTruthVotes:
    """A settled ground-truth review of one example: votes for given/guessed/both/neither."""

    example: int
    given: int  # the original label, as the reviewers saw it
    guessed: int  # the candidate label (a class id)
    votes: Mapping[str, int]


# ---------------------------------------------------------------- helpers


def _fields(parent: CompiledLabelSet) -> dict[str, Any]:
    return {
        "slug": parent.slug,
        "benchmark": parent.benchmark,
        "example_set": parent.example_set,
        "kind": parent.kind,
        "family": parent.family,
        "num_classes": parent.num_classes,
        "size": parent.size,
    }


def _index(value: Any, what: str, limit: int, where: str) -> int:
    """`value` as an int in 0..limit-1, else a ValueError that names it."""
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{where}: {what} {value!r} is not an integer") from None
    if isinstance(value, bool) or not 0 <= number < limit:
        raise ValueError(f"{where}: {what} {value!r} is outside 0..{limit - 1}")
    return number


def _keys(values: Iterable[int]) -> np.ndarray:
    return np.unique(np.fromiter(values, dtype=np.int64))


def keys_replace(keys: np.ndarray, touched: np.ndarray, added: np.ndarray) -> np.ndarray:
    """Sorted unique keys: `keys` without the touched pairs, plus `added`.

    A version's key lists are sorted and unique (every builder and this function make them
    so), and a decision touches a few pairs among up to millions (ImageNet's ReaL lists): the
    few are found and placed by binary search, one pass over the list instead of sorting it
    again twice (setdiff1d, union1d: about 0.13 s of every ReaL decision; docs/metrics.md §14).
    A list that is not sorted and unique takes the general path."""
    keys = np.asarray(keys, dtype=np.int64)
    touched = np.unique(np.asarray(touched, dtype=np.int64))
    added = np.unique(np.asarray(added, dtype=np.int64))
    if keys.size > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        return np.union1d(np.setdiff1d(keys, touched), added).astype(np.int64)
    at = np.searchsorted(keys, touched)
    present = at < keys.size
    present[present] = keys[at[present]] == touched[present]
    kept = np.delete(keys, at[present])
    at = np.searchsorted(kept, added)
    new = ~((at < kept.size) & (kept[np.minimum(at, kept.size - 1)] == added)) \
        if kept.size else np.ones(added.size, dtype=bool)
    return np.insert(kept, at[new], added[new])


def require_arrays(ls: CompiledLabelSet, names: Iterable[str]) -> None:
    missing = sorted(set(names) - set(ls.arrays))
    if missing:
        raise ValueError(
            f"label set {ls.slug!r} lacks arrays {missing} (compiled by an older builder?)"
        )


Revised = tuple[dict[str, np.ndarray], dict[str, Any]]
# (parent, touched pair keys, verdict -> its pair keys, examples touched, flagged examples)
# -> the revised arrays and meta: one family's way of taking verdicts in.
Revise = Callable[[CompiledLabelSet, np.ndarray, Mapping[str, np.ndarray], np.ndarray,
                   np.ndarray], Revised]


# ---------------------------------------------------------------- novel-prediction verdicts


def apply_verdicts(parent: CompiledLabelSet, verdicts: Sequence[Verdict], *,
                   revise: Revise) -> CompiledLabelSet:
    """The next version of a reviewable set after settled verdicts, `revise` being its
    family's step (the family's `apply_verdicts` passes it).

    A pair moves out of every list it was in and into the list of its verdict; of several
    verdicts on one pair the later wins. Multi-label sets: correct -> correct_keys, unclear ->
    unclear_keys, both accepted (docs/metrics.md §5.1: correct + unclear counts as correct);
    wrong -> wrong_keys. ReaL: correct -> accepted_keys; wrong and unclear -> wrong_keys.
    """
    n, c = parent.size, parent.num_classes
    latest: dict[int, VerdictKind] = {}
    flagged: set[int] = set()
    for i, v in enumerate(verdicts):
        where = f"verdict {i} on label set {parent.slug!r}"
        example = _index(v.example, "example", n, where)
        class_id = _index(v.class_id, "class", c, where)
        if v.verdict not in VERDICTS:
            raise ValueError(f"{where}: unknown verdict {v.verdict!r} (correct, wrong, unclear)")
        latest[example * c + class_id] = v.verdict
        if v.problematic:
            flagged.add(example)
    touched = _keys(latest)
    by_kind: dict[str, np.ndarray] = {
        kind: _keys(k for k, v in latest.items() if v == kind) for kind in VERDICTS
    }
    examples = np.union1d(touched // c, _keys(flagged))  # every example a verdict touched
    flagged_examples = _keys(flagged)
    arrays, meta = revise(parent, touched, by_kind, examples, flagged_examples)
    meta["revision"] = {
        "settled": len(verdicts),
        **{kind: sum(1 for v in verdicts if v.verdict == kind) for kind in VERDICTS},
        "problematic": sum(1 for v in verdicts if v.problematic),
    }
    return make_compiled(_fields(parent), arrays, meta)


# ---------------------------------------------------------------- ground-truth review


def apply_ground_truth(
    parent: CompiledLabelSet, votes: Sequence[GroundTruthVotes]
) -> CompiledLabelSet:
    """The next version of a corrected set after ground-truth reviews (Northcutt et al.).

    Each reviewed example gets the category of its votes at the parent's threshold
    (`label_set_builders.corrected_categories`; of several reviews of one example the later wins):
    non_error -> original label, included (in P), not correctable; correctable -> the guessed
    label, included and correctable; multi_label, neither, non_agreement -> pruned out (U).

    Meta after a review:
    - `threshold`, `flagged`, `counts`: unchanged, they describe the vote file the set was
      built from (the arrays cannot tell which of multi_label/neither/non_agreement an
      earlier pruned example was, nor a non-error from an example never flagged);
    - `pruned_size`, `correctable_size`: recomputed over the whole set, reviews included;
    - `ground_truth`: {"reviewed": examples reviewed so far, "counts": their latest
      category tally}, derived from the `review_category` array;
    - `revision` (not hashed): {"settled": reviews in this step, "counts": their tally}.
    """
    require_arrays(parent, ["labels", "corrected_labels", "pruned", "correctable"])
    try:
        threshold = int(parent.meta["threshold"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(
            f"label set {parent.slug!r} has no agreement threshold in its meta"
        ) from None
    a = parent.arrays
    n, c = parent.size, parent.num_classes
    labels = a["labels"]
    latest: dict[int, tuple[str, int]] = {}
    step_counts = dict.fromkeys(VOTE_CATEGORIES, 0)
    for i, v in enumerate(votes):
        where = f"ground-truth votes {i} on label set {parent.slug!r}"
        example = _index(v.example, "example", n, where)
        guessed = _index(v.guessed, "guessed class", c, where)
        if v.given != int(labels[example]):
            raise ValueError(
                f"{where}: given label {v.given!r} of example {example} is not its original "
                f"label {int(labels[example])}"
            )
        unknown = sorted(set(v.votes) - VOTE_KEYS)
        if unknown:
            raise ValueError(
                f"{where}: unknown vote keys {unknown} (given, guessed, both, neither)"
            )
        counts = {k: _index(x, f"{k!r} vote count", 1 << 31, where) for k, x in v.votes.items()}
        category = corrected_categories(counts, threshold)
        latest[example] = (category, guessed)
        step_counts[category] += 1
    corrected = a["corrected_labels"].copy()
    pruned = a["pruned"].copy()
    correctable = a["correctable"].copy()
    if "review_category" in a:
        review = a["review_category"].copy()
    else:
        review = np.full(n, -1, dtype=np.int8)
    for example, (category, guessed) in latest.items():
        correctable[example] = category == "correctable"
        pruned[example] = category in ("non_error", "correctable")
        corrected[example] = guessed if category == "correctable" else labels[example]
        review[example] = VOTE_CATEGORIES.index(category)
    arrays = dict(a)
    arrays.update(corrected_labels=corrected, pruned=pruned, correctable=correctable)
    meta = dict(parent.meta)
    meta.update(pruned_size=int(pruned.sum()), correctable_size=int(correctable.sum()))
    if (review >= 0).any():
        arrays["review_category"] = review
        meta["ground_truth"] = {
            "reviewed": int((review >= 0).sum()),
            "counts": {cat: int((review == k).sum()) for k, cat in enumerate(VOTE_CATEGORIES)},
        }
    meta["revision"] = {"settled": len(votes), "counts": step_counts}
    return make_compiled(_fields(parent), arrays, meta)
