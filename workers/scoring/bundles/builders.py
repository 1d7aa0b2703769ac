"""A bundle's files, read for its families (docs/bundles.md §5): the typed reader a family
builds its label sets from (families/declaration.py `BundleFiles`), and the manifest as a
family's fields see it (`ManifestLayout`, for the files and settings a label set names).

Nothing here knows a family's fields, kinds or layouts: each label set's own fields say what
they name (`LabelSetDef.fields`), and its family builds it (`BundleData.build`, memoized, so
that a label set built on another reads that one's files once per bundle load).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..datasets import MturkRecord
from ..families.declaration import Built, LabelSetDef
from ..families.registry import family_named
from ..families.vote_files import VoteFileDef
from ..splits import private_mask_listed, private_mask_random
from .classes import Classes, load_classes
from .data_files import check_labels, read_json, read_npy, read_npz_member, resolve
from .errors import BundleError
from .examples import ExampleNames
from .layout import ManifestLayout
from .model import Bundle
from .votes import read_vote_records

# The setting a bundle names for the multi-label file (docs/bundles.md §5.3): not in the public
# data directory; a maintainer configures it.
MULTILABEL_SOURCE = "multilabel_file"


def label_set_files(bundle: Bundle, ls: LabelSetDef) -> tuple[str, ...]:
    """The files (under the bundle's root) a label set is built from, read from the manifest
    alone; its base label sets' files first."""
    return ls.fields.files(ManifestLayout(bundle), ls.example_set)


def optional_source(bundle: Bundle, ls: LabelSetDef) -> str | None:
    """The server setting a label set's source comes from, if it is not a bundle file."""
    setting = ls.fields.setting(ManifestLayout(bundle))
    return None if setting is None else setting.name


class BundleData(ManifestLayout):
    """A bundle's files under its root (families/declaration.py `BundleFiles`); `sources`
    maps setting names to configured files."""

    def __init__(self, bundle: Bundle, *, data_dir: Path,
                 sources: Mapping[str, Path | None] | None = None) -> None:
        super().__init__(bundle)
        self.root = bundle.root(data_dir)
        self.sources = dict(sources or {})
        self._names: dict[str, ExampleNames] = {}
        self._built: dict[str, Built] = {}

    @cached_property
    def classes(self) -> Classes:
        return load_classes(self.bundle.classes, self.root)

    @property
    def num_classes(self) -> int:
        return self.bundle.classes.count

    @property
    def class_keys(self) -> tuple[str, ...] | None:
        return self.classes.keys

    def names(self, example_set: str) -> ExampleNames:
        if example_set not in self._names:
            self._names[example_set] = ExampleNames(self.bundle.example_set(example_set),
                                                    self.root)
        return self._names[example_set]

    def size(self, example_set: str) -> int:
        return self.bundle.example_set(example_set).size

    def build(self, slug: str) -> Built:
        """The label set's arrays and meta, built by its family (memoized: the label sets
        built on it read its files once)."""
        if slug not in self._built:
            ls = self.bundle.label_set(slug)
            self._built[slug] = family_named(ls.family).build(self, ls)
        return self._built[slug]

    def labels_of(self, slug: str) -> np.ndarray:
        """The one label per example of another label set (the original labels a correction
        builds on), in example order."""
        return self.build(slug)[0]["labels"]

    def read_labels(self, path: str, *, example_set: str, order: str | None,
                    labels_field: str, order_field: str) -> np.ndarray:
        """A label file (.npy, a class id per example), put in example order by `order` (a
        JSON list: entry i names the example of label i)."""
        labels = check_labels(read_npy(self.root, path, field=labels_field),
                              size=self.size(example_set), num_classes=self.num_classes,
                              file=path, field=labels_field)
        if order:
            perm = self.names(example_set).order(self.root, order, field=order_field)
            ordered = np.empty_like(labels)
            ordered[perm] = labels
            labels = ordered
        return labels

    def read_json(self, path: str, *, field: str) -> Any:
        return read_json(self.root, path, field=field)

    def read_npy(self, path: str, *, field: str) -> np.ndarray:
        return read_npy(self.root, path, field=field)

    def read_npz_member(self, path: str, member: str, *, field: str) -> np.ndarray:
        return read_npz_member(self.root, path, member, field=field)

    def read_setting_json(self, setting: str, *, field: str, unset_field: str) -> Any:
        """The JSON file a server setting names (`sources`); `not_configured` when unset."""
        path = self.sources.get(setting)
        if path is None:
            raise BundleError("not_configured", f"the setting {setting!r} that names the "
                              "annotation file is not set", field=unset_field)
        path = Path(path)
        resolve(path.parent, path.name, field=field)
        return read_json(path.parent, path.name, field=field)

    def example_indices(self, example_set: str, names: Sequence[object], *, file: str,
                        field: str) -> np.ndarray:
        return self.names(example_set).resolve_names(names, file=file, field=field)

    def vote_records(self, votes: VoteFileDef, *, example_set: str, original: np.ndarray,
                     field: str) -> list[MturkRecord]:
        return read_vote_records(votes, root=self.root, field=field,
                                 names=self.names(example_set), classes=self.classes,
                                 original=original)

    def error(self, code: str, message: str, *, file: str = "", field: str = "") -> BundleError:
        return BundleError(code, message, file=file, field=field)

    def private_mask(self, ls: LabelSetDef) -> np.ndarray | None:
        """A hidden label set's private part (docs/bundles.md §5.7), or None without a split."""
        field = f"label_sets.{ls.slug}.split"
        size = self.size(ls.example_set)
        try:
            if ls.split_private is not None:
                indices = read_json(self.root, ls.split_private, field=f"{field}.private")
                if not isinstance(indices, list) or not all(
                        isinstance(i, int) and not isinstance(i, bool) for i in indices):
                    raise ValueError("expected a JSON list of example indices")
                return private_mask_listed(size=size, indices=indices)
            if ls.split_fraction is not None and ls.split_seed is not None:
                return private_mask_random(size=size, fraction=ls.split_fraction,
                                           seed=ls.split_seed)
        except ValueError as error:
            raise BundleError("bad_value", str(error), file=ls.split_private or "",
                              field=field) from None
        return None
