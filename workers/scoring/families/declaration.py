"""A label set as a bundle declares it, and what a family reads it with (docs/bundles.md §5,
docs/families.md).

`LabelSetDef` is the generic part every label set has (slug, example set, names, hidden and
release) with its family's own fields (`LabelSetFields`, one frozen dataclass per family,
defined in the family's module). A family parses its fields from its manifest table
(`ManifestTable`), says which files and other label sets they name, checks them against the
rest of the manifest (`BundleLayout`), and builds its arrays from the bundle's files through a
typed reader (`BundleFiles`). The bundle code (workers/scoring/bundles) implements these
Protocols and knows no family's fields, kinds or layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..datasets import MturkRecord
from .vote_files import VoteFileDef

# A label set's arrays and its metadata, as a family's builder returns them.
Built = tuple[dict[str, np.ndarray], dict[str, Any]]
# (key under the label set's table, message, error code) -> the error to raise
Refuse = Callable[[str, str, str], Exception]


class ManifestTable(Protocol):
    """One manifest table read field by field (workers/scoring/bundles/fields.py `Table`):
    every read names its field in its error, `done()` refuses the keys no read asked for.
    Values are TOML's, checked by each read."""

    prefix: str
    data: Mapping[str, Any]

    def has(self, key: str) -> bool: ...
    def error(self, code: str, key: str, message: str) -> Exception: ...
    def string(self, key: str, default: Any = ...) -> Any: ...
    def integer(self, key: str, default: Any = ..., *, minimum: int | None = None,
                maximum: int | None = None) -> Any: ...
    def number(self, key: str, default: Any = ...) -> Any: ...
    def choice(self, key: str, choices: tuple[str, ...], default: Any = ...) -> Any: ...
    def slug(self, key: str, default: Any = ...) -> Any: ...
    def path(self, key: str, default: Any = ...) -> Any: ...
    def int_list(self, key: str, default: Any = ...) -> Any: ...
    def str_list(self, key: str, default: Any = ...) -> Any: ...
    def path_list(self, key: str, default: Any = ...) -> Any: ...
    def table(self, key: str, default: Any = ...) -> Any: ...
    def done(self) -> None: ...


@dataclass(frozen=True)
class Reference:
    """Another label set of the bundle that a label set names in its field `key`: it must be
    of `family` (`described` says so in an error) and on the same example set or on another;
    `builds_on`: its labels go into this one's (so its definition is part of this one's)."""

    key: str
    slug: str
    family: str
    described: str
    same_example_set: bool | None  # None: either
    builds_on: bool = True


@dataclass(frozen=True)
class Setting:
    """A server setting that names a label set's source file instead of the bundle (the
    multi-label annotations, which may not be redistributed), and the field that says so."""

    name: str
    key: str


class BundleLayout(Protocol):
    """The manifest as a family's fields see it, before any file is read."""

    @property
    def classes_file(self) -> str | None: ...
    @property
    def classes_key_field(self) -> str | None: ...
    def definition(self, slug: str) -> LabelSetDef: ...
    def files_of(self, slug: str) -> tuple[str, ...]: ...
    def setting_of(self, slug: str) -> Setting | None: ...
    def names_file(self, example_set: str) -> str | None: ...
    def example_naming(self, example_set: str) -> str: ...


class BundleFiles(BundleLayout, Protocol):
    """The bundle's files under its root, read for a family's build: every read is checked
    (no pickle, bounded sizes) and fails with a bundle error naming the file and the field."""

    @property
    def num_classes(self) -> int: ...
    @property
    def class_keys(self) -> tuple[str, ...] | None: ...
    def size(self, example_set: str) -> int: ...
    def labels_of(self, slug: str) -> np.ndarray: ...
    def read_labels(self, path: str, *, example_set: str, order: str | None,
                    labels_field: str, order_field: str) -> np.ndarray: ...
    def read_json(self, path: str, *, field: str) -> Any: ...
    def read_npy(self, path: str, *, field: str) -> np.ndarray: ...
    def read_npz_member(self, path: str, member: str, *, field: str) -> np.ndarray: ...
    def read_setting_json(self, setting: str, *, field: str, unset_field: str) -> Any: ...
    def example_indices(self, example_set: str, names: Sequence[object], *, file: str,
                        field: str) -> np.ndarray: ...
    def vote_records(self, votes: VoteFileDef, *, example_set: str, original: np.ndarray,
                     field: str) -> list[MturkRecord]: ...
    def error(self, code: str, message: str, *, file: str = "",
              field: str = "") -> Exception: ...


@dataclass(frozen=True)
class LabelSetFields:
    """A family's own fields of a label set; each family subclasses it with its fields and
    overrides what they name. The defaults: no file, no other label set, no setting."""

    def references(self) -> tuple[Reference, ...]:
        """The other label sets these fields name."""
        return ()

    def files(self, layout: BundleLayout, example_set: str) -> tuple[str, ...]:
        """The files (under the bundle's root) the label set is built from, its base label
        sets' first, read from the manifest alone."""
        return ()

    def setting(self, layout: BundleLayout) -> Setting | None:
        """The server setting its source comes from, if not a bundle file."""
        return None

    def check(self, layout: BundleLayout, example_set: str, refuse: Refuse) -> None:
        """Refuse what these fields cannot be given the rest of the manifest."""

    def params(self) -> dict[str, object]:
        """What the catalog keeps of these fields (LabelSet.params) for the pages to say."""
        return {}

    @property
    def slug_suffix(self) -> str:
        """Appended to the declared slug for every variant but the first (a table that
        declares several label sets, such as one per agreement threshold)."""
        return ""

    def named(self, text: str) -> str:
        """The declared name or description, with this variant's placeholders filled."""
        return text


@dataclass(frozen=True)
class LabelSetDef:
    """One label set of a bundle: what every label set declares, and its family's fields."""

    slug: str
    kind: str  # the manifest's `kind` (docs/bundles.md §5)
    family: str  # the family it compiles to (families/registry.py)
    example_set: str
    name: str
    description: str
    citation: str  # a key of Bundle.citations, or "" for none
    fields: LabelSetFields
    # Hidden (docs/bundles.md §5.7): the labels are never published; one number per submission
    # is released. None of these changes what the label set compiles to.
    hidden: bool = False
    release: str = ""  # hidden: one of RELEASES (DEFAULT_RELEASE unless given); "" if public
    step: float | None = None  # release "ladder": its step size eta; None: 3/sqrt(n)
    # hidden, split in a public and a private part: the private part's seeded fraction, or a
    # JSON file of its example indices (neither changes what the label set compiles to)
    split_fraction: float | None = None
    split_seed: int | None = None
    split_private: str | None = None
