"""Class names (and keys) of a bundle, from the manifest or from a file (docs/bundles.md §3).

Names must be unique, so that a label given by name denotes one class; where the classes
have keys (ImageNet's WordNet ids), the keys must be unique instead and a name may repeat
(ImageNet has two classes named `crane` and two named `maillot`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .data_files import read_json
from .errors import BundleError
from .model import ClassesDef

FIELD = "classes"
_FOLDER = re.compile(r"^(\d+)\.(.+)$")


@dataclass(frozen=True)
class Classes:
    names: tuple[str, ...]
    keys: tuple[str, ...] | None = None
    files: tuple[str, ...] = ()  # the files they were read from

    def id_of_name(self, name: object) -> int | None:
        if not isinstance(name, str):
            return None
        try:
            return self.names.index(name)
        except ValueError:
            return None


def load_classes(classes: ClassesDef, root: Path) -> Classes:
    if classes.source == "inline":
        return Classes(classes.names)
    assert classes.file is not None
    file = classes.file
    raw = read_json(root, file, field=f"{FIELD}.file")
    if classes.source == "json_list":
        if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
            raise _bad(file, "expected a JSON list of class names")
        return _checked(classes, tuple(raw), None, file)
    if classes.source == "records":
        return _records(classes, raw, file)
    pairs = _folder_pairs(raw, file, classes) if classes.source == "folder_names" else \
        _vote_pairs(raw, file)
    by_id: dict[int, str] = {}
    for class_id, name in pairs:
        if not 0 <= class_id < classes.count:
            raise BundleError("label_out_of_range",
                              f"class {class_id} ({name!r}) is outside 0..{classes.count - 1}",
                              file=file, field=f"{FIELD}.file")
        if by_id.setdefault(class_id, name) != name:
            raise _bad(file, f"class {class_id} is named both {by_id[class_id]!r} and {name!r}")
    missing = [i for i in range(classes.count) if i not in by_id]
    if missing:
        raise _bad(file, f"{len(missing)} classes are never named, the first {missing[0]}")
    return _checked(classes, tuple(by_id[i] for i in range(classes.count)), None, file)


def _bad(file: str, message: str) -> BundleError:
    return BundleError("bad_file", message, file=file, field=f"{FIELD}.file")


def _folder_pairs(raw: Any, file: str, classes: ClassesDef) -> list[tuple[int, str]]:
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise _bad(file, "expected a JSON list of paths")
    pairs = []
    for folder in {path.split("/", 1)[0] for path in raw}:
        match = _FOLDER.match(folder)
        if not match:
            raise _bad(file, f"the folder {folder!r} is not named `NNN.name`")
        pairs.append((int(match.group(1)) - classes.first_number, match.group(2)))
    return sorted(pairs)


def _vote_pairs(raw: Any, file: str) -> list[tuple[int, str]]:
    """(id, name) of the original and guessed label of every record (cleanlab's layout)."""
    if not isinstance(raw, list):
        raise _bad(file, "expected a JSON list of vote records")
    pairs = []
    for record in raw:
        for prefix in ("given_original_label", "our_guessed_label"):
            class_id = record.get(prefix) if isinstance(record, dict) else None
            name = record.get(f"{prefix}_name") if isinstance(record, dict) else None
            if isinstance(class_id, bool) or not isinstance(class_id, int) or \
                    not isinstance(name, str):
                raise _bad(file, f"a record lacks an integer {prefix} and a string "
                                 f"{prefix}_name")
            pairs.append((class_id, name))
    return pairs


def _records(classes: ClassesDef, raw: Any, file: str) -> Classes:
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise _bad(file, "expected a JSON list of class records")
    names, keys = [], []
    for i, record in enumerate(raw):
        if record.get(classes.id_field) != i:
            raise _bad(file, f"record {i} has {classes.id_field} {record.get(classes.id_field)!r}"
                             f"; expected ids 0..{len(raw) - 1} in order")
        name = record.get(classes.name_field)
        if isinstance(name, list) and name:
            name = name[0]  # a list of synonyms: the first is the name
        if not isinstance(name, str):
            raise _bad(file, f"record {i} has no string {classes.name_field!r}")
        names.append(name)
        if classes.key_field:
            key = record.get(classes.key_field)
            if not isinstance(key, str):
                raise _bad(file, f"record {i} has no string {classes.key_field!r}")
            keys.append(key)
    return _checked(classes, tuple(names), tuple(keys) if classes.key_field else None, file)


def _checked(classes: ClassesDef, names: tuple[str, ...], keys: tuple[str, ...] | None,
             file: str) -> Classes:
    if len(names) != classes.count:
        raise BundleError("length_mismatch", f"{len(names)} classes, the manifest says "
                          f"{classes.count}", file=file, field=f"{FIELD}.count")
    unique, what = (keys, "key") if keys is not None else (names, "name")
    seen: set[str] = set()
    for i, value in enumerate(unique):
        if value in seen:
            raise BundleError("duplicate_class",
                              f"the class {what} {value!r} appears twice (class {i})",
                              file=file, field=f"{FIELD}.file")
        seen.add(value)
    return Classes(names, keys, (file,))
