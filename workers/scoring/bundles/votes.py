"""A human-validation vote file read through its vocabulary (docs/bundles.md §5.2).

Each record names an example (by index, file number or name), its original and guessed
labels (by id or by class name) and the votes of the workers under the file's own keys. The
vocabulary maps every key to what a vote for it means; votes are summed per meaning into the
keys `corrected_categories` reads (`given`, `guessed`, `both`, `neither`), and answers that
name no label (IMDB's `neutral`, `off-topic`) are dropped, so such an example reaches no
category by them and is non-agreement (docs/metrics.md §3.1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..datasets import MturkRecord
from ..families.vote_files import VoteFileDef
from .classes import Classes
from .data_files import read_json
from .errors import BundleError
from .examples import ExampleNames

# meaning -> the vote key of label_set_builders.corrected_categories
CATEGORY_KEYS = {"original": "given", "guessed": "guessed", "both": "both", "neither": "neither"}


def read_vote_records(
    votes: VoteFileDef,
    *,
    root: Path,
    field: str,
    names: ExampleNames,
    classes: Classes,
    original: np.ndarray,
) -> list[MturkRecord]:
    file = votes.file
    raw = read_json(root, file, field=f"{field}.file")
    if not isinstance(raw, list):
        raise BundleError("bad_file", "expected a JSON list of vote records", file=file,
                          field=f"{field}.file")
    meanings = votes.meanings
    records: list[MturkRecord] = []
    seen: set[int] = set()
    for position, record in enumerate(raw):
        where = f"{field} (record {position})"

        def refuse(code: str, message: str, where: str = where) -> BundleError:
            return BundleError(code, message, file=file, field=where)

        if not isinstance(record, dict):
            raise refuse("bad_file", "a record is not a JSON object")
        index = _example(votes, record.get(votes.id_field), names, where)
        if index in seen:
            raise refuse("bad_file", f"example {names.name(index)!r} is voted on twice")
        seen.add(index)
        given = _label(votes, record.get(votes.given_field), classes, votes.given_field, where)
        guessed = _label(votes, record.get(votes.guessed_field), classes, votes.guessed_field,
                         where)
        if given != int(original[index]):
            raise refuse(
                "vote_mismatch",
                f"the vote file gives example {names.name(index)!r} the original label {given}, "
                f"the label file {int(original[index])} (are the files in the same order?)",
            )
        raw_votes = record.get(votes.votes_field)
        if not isinstance(raw_votes, dict):
            raise refuse("bad_file", f"no {votes.votes_field!r} object of votes")
        summed: dict[str, int] = {}
        for key, count in raw_votes.items():
            if key not in meanings:
                raise BundleError(
                    "unknown_vote_key",
                    f"record {position} has the vote key {key!r}, which the vocabulary does not "
                    f"map (it maps {', '.join(map(repr, meanings))})",
                    file=file,
                    field=f"{field}.vocabulary",
                )
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise refuse("bad_file", f"the votes for {key!r} are not a count: {count!r}")
            category_key = CATEGORY_KEYS.get(meanings[key])
            if category_key is not None:
                summed[category_key] = summed.get(category_key, 0) + count
        records.append(MturkRecord(index, given, guessed, summed))
    return records


def _example(votes: VoteFileDef, raw_id: Any, names: ExampleNames, where: str) -> int:
    def refuse(code: str, message: str) -> BundleError:
        return BundleError(code, message, file=votes.file, field=where)

    if votes.ids == "name":
        if not isinstance(raw_id, str) or not raw_id.startswith(votes.id_prefix):
            raise refuse("unknown_example",
                         f"{votes.id_field} {raw_id!r} does not start with {votes.id_prefix!r}")
        name = raw_id[len(votes.id_prefix):] + votes.id_suffix
        return names.resolve_name(name, file=votes.file, field=where)
    if isinstance(raw_id, bool) or not isinstance(raw_id, int):
        raise refuse("bad_file", f"{votes.id_field} {raw_id!r} is not an integer")
    index = names.index_of_number(raw_id) if votes.ids == "number" else raw_id
    if index is None or not 0 <= index < names.size:
        raise refuse("unknown_example",
                     f"{votes.id_field} {raw_id} names no example of {names.example_set.slug!r}")
    return index


def _label(votes: VoteFileDef, raw: Any, classes: Classes, key: str, where: str) -> int:
    def refuse(code: str, message: str) -> BundleError:
        return BundleError(code, message, file=votes.file, field=where)

    if votes.labels == "name":
        class_id = classes.id_of_name(raw)
        if class_id is None:
            raise refuse("unknown_class", f"{key} {raw!r} is not a class name")
        return class_id
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise refuse("bad_file", f"{key} {raw!r} is not an integer class id")
    if not 0 <= raw < len(classes.names):
        raise refuse("label_out_of_range", f"{key} {raw} is outside 0..{len(classes.names) - 1}")
    return raw
