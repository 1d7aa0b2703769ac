"""Example naming (docs/bundles.md §4): index, file-number pattern, or index-to-name file.

Turns the names and numbers that label files and vote files use into 0-based example
indices, and back for display.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .data_files import read_json
from .errors import BundleError
from .manifest import pattern_parts
from .model import ExampleSetDef

AMBIGUOUS = -2


class ExampleNames:
    """The naming of one example set; `field` is the manifest field that declared it."""

    def __init__(self, example_set: ExampleSetDef, root: Path) -> None:
        self.example_set = example_set
        self.size = example_set.size
        self.field = f"example_sets.{example_set.slug}"
        self._names: list[str] | None = None
        self._index: dict[str, int] | None = None
        self._regex: re.Pattern[str] | None = None
        if example_set.naming == "pattern":
            assert example_set.pattern is not None
            parts = pattern_parts(example_set.pattern)
            assert parts is not None
            prefix, width, self._suffix = parts
            self._prefix, self._width = prefix, width
            digits = rf"(\d{{{width}}})" if width else r"(\d+)"
            # the name itself, or the last part of a path (`val/<wnid>/<name>`)
            literal = re.escape(prefix), re.escape(self._suffix)
            self._regex = re.compile(rf"(?:^|/){literal[0]}{digits}{literal[1]}$")
        elif example_set.naming == "file":
            assert example_set.names_file is not None
            field = f"{self.field}.names"
            names = read_json(root, example_set.names_file, field=field)
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise BundleError("bad_file", "expected a JSON list of names",
                                  file=example_set.names_file, field=field)
            if len(names) != self.size:
                raise BundleError("length_mismatch",
                                  f"{len(names)} names for an example set of {self.size}",
                                  file=example_set.names_file, field=field)
            self._names = names
            index: dict[str, int] = {}
            for i, name in enumerate(names):
                # A name listed twice names no single example (IMDB's file repeats 193 names).
                index[name] = AMBIGUOUS if name in index else i
            self._index = index

    @property
    def files(self) -> tuple[str, ...]:
        names_file = self.example_set.names_file
        return (names_file,) if names_file else ()

    def name(self, index: int) -> str:
        if self._names is not None:
            return self._names[index]
        if self._regex is not None:
            number = index + self.example_set.first_number
            digits = f"{number:0{self._width}d}" if self._width else str(number)
            return f"{self._prefix}{digits}{self._suffix}"
        return f"{self.example_set.slug}[{index}]"

    def index_of_number(self, number: int) -> int | None:
        index = number - self.example_set.first_number
        return index if 0 <= index < self.size else None

    def index_of_name(self, name: str) -> int | None:
        """The example a name denotes; None if none; AMBIGUOUS if the names file lists it twice."""
        if self._index is not None:
            return self._index.get(name)
        if self._regex is not None:
            match = self._regex.search(name)
            return self.index_of_number(int(match.group(1))) if match else None
        return None

    def resolve_name(self, name: object, *, file: str, field: str) -> int:
        index = self.index_of_name(name) if isinstance(name, str) else None
        if index is None or index == AMBIGUOUS:
            why = "names several examples" if index == AMBIGUOUS else "names no example"
            raise BundleError("unknown_example", f"{name!r} {why} of {self.example_set.slug!r}",
                              file=file, field=field)
        return index

    def resolve_names(self, names: Sequence[object], *, file: str, field: str) -> np.ndarray:
        return np.fromiter(
            (self.resolve_name(n, file=file, field=field) for n in names),
            dtype=np.int64, count=len(names),
        )

    def order(self, root: Path, relative: str, *, field: str) -> np.ndarray:
        """perm[i] = the example that entry i of an index-to-name file names (a permutation)."""
        names = read_json(root, relative, field=field)
        if not isinstance(names, list):
            raise BundleError("bad_file", "expected a JSON list of names", file=relative,
                              field=field)
        if len(names) != self.size:
            raise BundleError("length_mismatch",
                              f"{len(names)} names for an example set of {self.size}",
                              file=relative, field=field)
        perm = self.resolve_names(names, file=relative, field=field)
        if np.unique(perm).shape[0] != self.size:
            raise BundleError("bad_file", "does not name every example exactly once",
                              file=relative, field=field)
        return perm
