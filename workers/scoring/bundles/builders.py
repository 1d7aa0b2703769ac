"""Arrays and metadata of each label set of a bundle, from its files (docs/bundles.md §5).

`BundleData` reads each file once per bundle load; each family's `build`
(workers/scoring/families) takes what it needs from it: a label file's labels, a vote file's
records, or the arrays of the soft, ReaL and human_accuracy layouts read here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .. import label_set_builders as builders
from ..datasets import DataError, MturkRecord
from ..families.registry import manifest_shape
from ..multilabel import build_multilabel_arrays
from ..splits import private_mask_listed, private_mask_random
from .classes import Classes, load_classes
from .data_files import check_labels, read_json, read_npy, read_npz_member, resolve
from .errors import BundleError
from .examples import ExampleNames
from .model import BUILTIN_COLLAPSE, Bundle, LabelSetDef
from .votes import read_vote_records

Built = tuple[dict[str, np.ndarray], dict[str, Any]]


def label_set_files(bundle: Bundle, ls: LabelSetDef) -> tuple[str, ...]:
    """The files (under the bundle's root) a label set is built from, read from the manifest
    alone; the order is catalog.py's (a label set's base files first)."""
    shape = manifest_shape(ls.kind)
    if shape == "labels":
        assert ls.labels is not None
        return (ls.labels,) + ((ls.order,) if ls.order else ())
    if shape == "soft":
        return (ls.probabilities or ls.counts or "",)
    if shape == "subset":
        assert ls.of is not None
        base = label_set_files(bundle, bundle.label_set(ls.of))
        return base + ((ls.list_file,) if ls.list_file else ())
    assert ls.original is not None
    files = label_set_files(bundle, bundle.label_set(ls.original))
    if shape == "validated":
        assert ls.votes is not None
        names_file = bundle.example_set(ls.example_set).names_file
        if ls.votes.ids == "name" and names_file and names_file not in files:
            files += (names_file,)
        if ls.votes.labels == "name" and bundle.classes.file:
            files += (bundle.classes.file,)
        return files + (ls.votes.file,)
    if ls.layout == "real":
        assert ls.accepted is not None and ls.judged is not None
        return files + (ls.accepted, ls.judged)
    files += (bundle.classes.file,) if bundle.classes.file else ()
    files += (ls.annotations,) if ls.annotations else ()
    return files + ((ls.collapse,) if ls.collapse not in (None, "none", BUILTIN_COLLAPSE) else ())


def optional_source(bundle: Bundle, ls: LabelSetDef) -> str | None:
    """The server setting a label set's source comes from, if it is not a bundle file."""
    if manifest_shape(ls.kind) == "subset":
        assert ls.of is not None
        return optional_source(bundle, bundle.label_set(ls.of))
    return ls.annotations_setting


class BundleData:
    """A bundle's files under its root; `sources` maps setting names to configured files."""

    def __init__(self, bundle: Bundle, *, data_dir: Path,
                 sources: Mapping[str, Path | None] | None = None) -> None:
        self.bundle = bundle
        self.root = bundle.root(data_dir)
        self.sources = dict(sources or {})
        self._names: dict[str, ExampleNames] = {}
        self._single: dict[str, np.ndarray] = {}

    @cached_property
    def classes(self) -> Classes:
        return load_classes(self.bundle.classes, self.root)

    def names(self, example_set: str) -> ExampleNames:
        if example_set not in self._names:
            self._names[example_set] = ExampleNames(self.bundle.example_set(example_set),
                                                    self.root)
        return self._names[example_set]

    def size(self, ls: LabelSetDef) -> int:
        return self.bundle.example_set(ls.example_set).size

    def single_labels(self, slug: str) -> np.ndarray:
        """The labels of a single or new_test_set label set, in example order (memoized)."""
        if slug not in self._single:
            ls = self.bundle.label_set(slug)
            assert ls.labels is not None
            field = f"label_sets.{slug}"
            labels = check_labels(
                read_npy(self.root, ls.labels, field=f"{field}.labels"),
                size=self.size(ls), num_classes=self.bundle.classes.count,
                file=ls.labels, field=f"{field}.labels",
            )
            if ls.order:
                perm = self.names(ls.example_set).order(self.root, ls.order,
                                                        field=f"{field}.order")
                ordered = np.empty_like(labels)
                ordered[perm] = labels
                labels = ordered
            labels.setflags(write=False)
            self._single[slug] = labels
        return self._single[slug]

    def private_mask(self, ls: LabelSetDef) -> np.ndarray | None:
        """A hidden label set's private part (docs/bundles.md §5.7), or None without a split."""
        field = f"label_sets.{ls.slug}.split"
        try:
            if ls.split_private is not None:
                indices = read_json(self.root, ls.split_private, field=f"{field}.private")
                if not isinstance(indices, list) or not all(
                        isinstance(i, int) and not isinstance(i, bool) for i in indices):
                    raise ValueError("expected a JSON list of example indices")
                return private_mask_listed(size=self.size(ls), indices=indices)
            if ls.split_fraction is not None and ls.split_seed is not None:
                return private_mask_random(size=self.size(ls), fraction=ls.split_fraction,
                                           seed=ls.split_seed)
        except ValueError as error:
            raise BundleError("bad_value", str(error), file=ls.split_private or "",
                              field=field) from None
        return None

    def vote_records(self, slug: str) -> list[MturkRecord]:
        """The vote records of a validated label set, examples as 0-based indices and labels
        as class ids (the same for every threshold declared)."""
        ls = self.bundle.label_set(slug)
        assert ls.kind == "validated" and ls.votes is not None and ls.original is not None
        return read_vote_records(
            ls.votes, root=self.root, field=f"label_sets.{ls.slug}.votes",
            names=self.names(ls.example_set), classes=self.classes,
            original=self.single_labels(ls.original),
        )

    def soft_arrays(self, ls: LabelSetDef) -> Built:
        """Probabilities (or vote counts, normalised) per example and class."""
        field = f"label_sets.{ls.slug}"
        key = "probabilities" if ls.probabilities else "counts"
        file = ls.probabilities or ls.counts
        assert file is not None
        values = read_npy(self.root, file, field=f"{field}.{key}")
        shape = (self.size(ls), self.bundle.classes.count)
        if values.shape != shape or values.dtype.kind not in "iuf":
            raise BundleError("length_mismatch" if values.ndim == 2 else "bad_file",
                              f"expected numbers of shape {shape}, got {values.dtype} "
                              f"{values.shape}", file=file, field=f"{field}.{key}")
        values = values.astype(np.float64)
        if not np.isfinite(values).all() or (values < 0).any():
            raise BundleError("bad_file", "has a negative, infinite or NaN entry", file=file,
                              field=f"{field}.{key}")
        sums = values.sum(axis=1, keepdims=True)
        if key == "counts":
            if (sums <= 0).any():
                raise BundleError("bad_file", "an example has no votes", file=file,
                                  field=f"{field}.counts")
            values = values / sums
        elif np.abs(sums - 1).max() > 1e-6:
            raise BundleError("bad_file", "a row of probabilities does not sum to 1",
                              file=file, field=f"{field}.probabilities")
        return {"probs": values}, {"annotated": self.size(ls)}

    def real_arrays(self, ls: LabelSetDef) -> Built:
        """ReaL (docs/metrics.md §4) on any example set: accepted lists and judged pairs."""
        field = f"label_sets.{ls.slug}"
        assert ls.accepted is not None and ls.judged is not None and ls.original is not None
        original = self.single_labels(ls.original)
        n, c = self.size(ls), self.bundle.classes.count
        lists = read_json(self.root, ls.accepted, field=f"{field}.accepted")
        if not isinstance(lists, list) or not all(isinstance(x, list) for x in lists):
            raise BundleError("bad_file", "expected a JSON list of lists of class ids",
                              file=ls.accepted, field=f"{field}.accepted")
        if len(lists) != n:
            raise BundleError("length_mismatch", f"{len(lists)} lists for an example set of {n}",
                              file=ls.accepted, field=f"{field}.accepted")
        lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=n)
        flat = [k for x in lists for k in x]
        if not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < c for k in flat):
            raise BundleError("label_out_of_range", f"a class id outside 0..{c - 1}",
                              file=ls.accepted, field=f"{field}.accepted")
        examples = np.repeat(np.arange(n), lengths)
        accepted = builders.pair_keys(examples, np.array(flat, dtype=np.int64), c)
        info = read_npz_member(self.root, ls.judged, "info", field=f"{field}.judged")
        if info.ndim != 2 or info.shape[1] != 2 or info.dtype.kind not in "US":
            raise BundleError("bad_file", "`info` must be (example name, class id) text pairs",
                              file=ls.judged, field=f"{field}.judged")
        names = self.names(ls.example_set)
        rated_examples = names.resolve_names(info[:, 0].tolist(), file=ls.judged,
                                             field=f"{field}.judged")
        try:
            rated_classes = info[:, 1].astype(np.int64)
        except (ValueError, OverflowError):
            raise BundleError("bad_file", "a class id in `info` is not an integer",
                              file=ls.judged, field=f"{field}.judged") from None
        if ((rated_classes < 0) | (rated_classes >= c)).any():
            raise BundleError("label_out_of_range", f"a class id outside 0..{c - 1}",
                              file=ls.judged, field=f"{field}.judged")
        rated = builders.pair_keys(rated_examples, rated_classes, c)
        return builders.real_arrays(accepted=accepted, rated=rated, rated_examples=rated_examples,
                                    original=original, num_classes=c)

    def _annotations(self, ls: LabelSetDef, field: str) -> Any:
        if ls.annotations:
            return read_json(self.root, ls.annotations, field=f"{field}.annotations")
        assert ls.annotations_setting is not None
        path = self.sources.get(ls.annotations_setting)
        if path is None:
            raise BundleError("not_configured", f"the setting {ls.annotations_setting!r} that "
                              "names the annotation file is not set", field=f"{field}.annotations")
        path = Path(path)
        resolve(path.parent, path.name, field=f"{field}.annotations_setting")
        return read_json(path.parent, path.name, field=f"{field}.annotations_setting")

    def human_accuracy_arrays(self, ls: LabelSetDef) -> Built:
        """Multi-label ImageNet (docs/metrics.md §5) or a subset of it such as ImageNet-M (§6)."""
        field = f"label_sets.{ls.slug}"
        subset = ls if manifest_shape(ls.kind) == "subset" else None
        if subset is not None:
            assert subset.of is not None
            ls = self.bundle.label_set(subset.of)
            field = f"label_sets.{ls.slug}"
        assert ls.original is not None
        if self.size(ls) != 50_000 or self.bundle.classes.count != 1000:
            raise BundleError("bad_value", "the human_accuracy layout is ImageNet's: 50,000 "
                              "validation images and 1,000 classes", field=f"{field}.layout")
        raw = self._annotations(ls, field)
        if subset is not None:
            sub_field = f"label_sets.{subset.slug}"
            if subset.list_file:
                listed = read_json(self.root, subset.list_file, field=f"{sub_field}.list_file")
            else:
                listed = raw.get(subset.list_field, []) if isinstance(raw, dict) else []
            if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
                raise BundleError("bad_file", "the subset list is not a list of example names",
                                  field=f"{sub_field}.list_field")
            raw = {**raw, "imagenet_m": listed} if isinstance(raw, dict) else raw
        try:
            arrays, meta = build_multilabel_arrays(
                raw, original=self.single_labels(ls.original), wnids=self.classes.keys or (),
                imagenet_m=subset is not None,
            )
        except (DataError, AttributeError, TypeError, KeyError, ValueError, IndexError) as error:
            raise BundleError("bad_file", f"not in the human_accuracy layout: {error}",
                              field=f"{field}.annotations") from None
        if subset is None and ls.collapse != BUILTIN_COLLAPSE:
            pairs = [] if ls.collapse == "none" else self._collapse_pairs(ls, field)
            arrays["collapsed_keys"] = _widen(arrays["accepted_keys"], pairs, 1000)
        return arrays, meta

    def _collapse_pairs(self, ls: LabelSetDef, field: str) -> list[tuple[int, int]]:
        assert ls.collapse is not None
        raw = read_json(self.root, ls.collapse, field=f"{field}.collapse")
        c = self.bundle.classes.count
        if not isinstance(raw, list) or not all(
            isinstance(p, list) and len(p) == 2
            and all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < c for k in p)
            for p in raw
        ):
            raise BundleError("bad_file", f"expected a JSON list of [accepted, also correct] "
                              f"class id pairs in 0..{c - 1}", file=ls.collapse,
                              field=f"{field}.collapse")
        return [(a, b) for a, b in raw]


def _widen(accepted_keys: np.ndarray, pairs: list[tuple[int, int]], c: int) -> np.ndarray:
    """Accepted keys plus (example, b) wherever (example, a) is accepted, for each (a, b)."""
    examples, labels = np.divmod(accepted_keys, c)
    extra = [accepted_keys] + [examples[labels == a] * c + b for a, b in pairs]
    return np.unique(np.concatenate(extra))
