"""One hidden labelling under one release mechanism (docs/hosts/hidden-test-sets.md, "One
labelling, one mechanism"; docs/bundles.md §5.7).

A release mechanism protects a hidden label set only if nothing else releases numbers on the
same labels. Declared twice, once released exactly and once by the Ladder, a participant
tunes a submission on the exact numbers and has the Ladder release it: the Ladder's bound on
adaptive overfitting no longer holds (issue 37: a boosting vote of true accuracy 58.25% was
released at 61.17% on the Ladder set). So two hidden label sets of one benchmark, on one
example set, released by different mechanisms (an `exact`, a `ladder` of another step, a
`parameter_free`) may not share their labels: neither may score exactly the labels the other
scores on the examples it scores (the same labels, or one's examples a subset of the other's
with the same labels on them). Compared on the compiled label sets, as each is scored: a
label set of one label per example by the examples it scores and the label each is scored
against (a validated set: its corrected labels on the pruned set P); any other kind by all of
its arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..label_set_builders import CompiledLabelSet, evaluated_mask
from .errors import BundleError


@dataclass(frozen=True)
class HiddenRelease:
    """A hidden label set as released: its mechanism and its compiled labels."""

    slug: str
    release: str  # "exact", "ladder" or "parameter_free"
    step: float | None  # the Ladder's step; None: its default, 3/sqrt(n)
    labels: CompiledLabelSet
    loaded: bool = False  # already loaded, not declared by the bundle being checked

    @property
    def described(self) -> str:
        return f"{self.slug!r} ({'loaded, ' if self.loaded else ''}release {self.mechanism})"

    @property
    def mechanism(self) -> str:
        if self.release != "ladder":
            return self.release
        return f"ladder (step {'3/sqrt(n)' if self.step is None else f'{self.step:g}'})"


def _scored(compiled: CompiledLabelSet) -> tuple[np.ndarray, np.ndarray] | None:
    """(the examples it scores, the label each is scored against) for a label set of one
    label per example; None for the other kinds."""
    arrays = compiled.arrays
    labels = arrays.get("corrected_labels", arrays.get("labels"))
    if compiled.kind != "single" or labels is None:
        return None
    return np.asarray(evaluated_mask(compiled), dtype=bool), np.asarray(labels)


def _within(inner: tuple[np.ndarray, np.ndarray], outer: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether every example `inner` scores is scored by `outer`, against the same label."""
    mask, labels = inner
    if not mask.any() or (mask & ~outer[0]).any():
        return False
    return bool(np.array_equal(labels[mask], outer[1][mask]))


def shared_labels(first: HiddenRelease, second: HiddenRelease) -> str | None:
    """How one's labels are the other's, in words; None when they are not."""
    a, b = first.labels, second.labels
    if a.example_set != b.example_set or a.size != b.size:
        return None
    scored_a, scored_b = _scored(a), _scored(b)
    if scored_a is not None and scored_b is not None:
        a_in_b, b_in_a = _within(scored_a, scored_b), _within(scored_b, scored_a)
        if a_in_b and b_in_a:
            return "score the same labels on the same examples"
        if a_in_b or b_in_a:
            inner, outer = (first, second) if a_in_b else (second, first)
            return (f"share labels: every example {inner.slug!r} scores is scored by "
                    f"{outer.slug!r} against the same label")
        return None
    same = (a.family == b.family and set(a.arrays) == set(b.arrays)
            and all(np.array_equal(a.arrays[name], b.arrays[name]) for name in a.arrays))
    return "hold the same labels" if same else None


def hidden_labels_check(sets: Sequence[HiddenRelease], *, file: str) -> None:
    """Refuse (`hidden_labels_shared`) two hidden label sets released by different mechanisms
    whose labels one reveals through the other; the error names both, both mechanisms and
    why, and the field of the later one. `sets`: every hidden label set of one benchmark, those
    loaded first, then the bundle's."""
    for first, second in combinations(sets, 2):
        if first.mechanism == second.mechanism or (first.loaded and second.loaded):
            continue  # one mechanism releases the same numbers twice at most; two loaded
            # sets are not this bundle's doing
        how = shared_labels(first, second)
        if how is None:
            continue
        raise BundleError(
            "hidden_labels_shared",
            f"the hidden label sets {first.described} and {second.described} {how}: a "
            "participant could tune a submission on the numbers one mechanism releases and "
            "have the other release it, which undoes the protection of the stricter one "
            "(docs/hosts/hidden-test-sets.md). Release both by one mechanism, or keep one of "
            "them", file=file, field=f"label_sets.{second.slug}.release")
