"""An example-major index of the stored top-k predictions, so that re-scoring after one review
decision reads the changed examples' top-k of every submission from a few index files instead
of opening every submission's compact file (docs/metrics.md §14; issue 22: at 10,000
submissions those opens alone took about a second).

The scored submissions of an example set are cut into segments by id (`SEGMENT` ids each). A
segment's index file holds `topk` as [example, submission, k] (a -1 where a submission has
fewer guesses), in the segment's id order, as the first member of an uncompressed .npz, so
the rows of a few examples are read in place (workers/scoring/compact.py).

It lives in the same storage as the compact files (on S3 every worker reads it; nothing is on
one host's disk only), under a name made from what it was built from: each submission file's
submission id, row id, upload hash and compact name. Any change to a segment's submissions (one
scored, withdrawn, its files replaced) changes that name, so a stale index is never found,
never read: that segment is read file by file, as before, until it is built again. Only
segments whose id range lies below the newest submission id are built (a newer submission can
no longer join them); the newest segment is read file by file, at most SEGMENT files.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from itertools import groupby

import numpy as np
from django.core.files.base import File
from django.core.files.storage import Storage

from leaderboard.submissions.stored_files import stored_compact
from workers.scoring.compact import compact_member_names, npz_member_rows

# Submission ids per segment: a segment's index is [50,000 x 256 x 5] int16 on ImageNet
# (128 MB, built in memory once); at 10,000 submissions 40 files are read per decision.
SEGMENT = 256
FOLDER = "topk-index"


class IndexedFile:
    """One scored submission file, as far as the index needs it (a SubmissionFile's fields)."""

    __slots__ = ("compact", "file_id", "example_set", "sha256", "submission_id")

    def __init__(self, submission_id: int, file_id: int, sha256: str, compact: str,
                 example_set: str) -> None:
        self.submission_id, self.file_id = submission_id, file_id
        # example_set: its slug, which names its arrays in the submission's compact file
        self.sha256, self.compact, self.example_set = sha256, compact, example_set


def _segments(files: Sequence[IndexedFile]) -> list[tuple[int, list[IndexedFile]]]:
    ordered = sorted(files, key=lambda f: f.submission_id)
    return [(segment, list(group)) for segment, group in
            groupby(ordered, key=lambda f: f.submission_id // SEGMENT)]


def _name(example_set_id: int, segment: int, files: Sequence[IndexedFile]) -> str:
    digest = hashlib.sha256("\n".join(
        f"{f.submission_id} {f.file_id} {f.sha256} {f.compact}" for f in files).encode())
    return f"{FOLDER}/{example_set_id}/{segment:07d}-{digest.hexdigest()[:40]}.npz"


def _sealed(segment: int, newest_id: int) -> bool:
    return (segment + 1) * SEGMENT <= newest_id


def topk_at(*, storage: Storage, example_set_id: int, files: Sequence[IndexedFile],
            examples: np.ndarray) -> np.ndarray:
    """int64 [file, example, k]: each file's stored top-k at `examples` (-1: no guess there),
    in the order of `files`; from a segment's index where it has one, otherwise from each
    compact file's rows."""
    parts: dict[int, np.ndarray] = {}  # submission id -> [example, k]
    for segment, members in _segments(files):
        name = _name(example_set_id, segment, members)
        block = _index_rows(storage, name, examples)  # [example, member, k]
        if block is not None:
            for i, f in enumerate(members):
                parts[f.submission_id] = block[:, i, :]
            continue
        for f in members:  # only those rows are read (S3: a small file fetched whole, a
            # large one by ranged GETs: leaderboard/common/object_storage.py)
            with storage.open(f.compact, "rb") as handle:
                parts[f.submission_id] = npz_member_rows(
                    handle, compact_member_names(f.example_set, "topk"), examples)
    width = max((p.shape[1] for p in parts.values()), default=1)
    tops = np.full((len(files), examples.size, width), -1, dtype=np.int64)
    for i, f in enumerate(files):
        top = parts[f.submission_id]
        tops[i, :, :top.shape[1]] = top
    return tops


def _index_rows(storage: Storage, name: str, examples: np.ndarray) -> np.ndarray | None:
    """The index's rows at `examples`; None when it has none (asked by opening it: on S3 an
    exists() would be one more request)."""
    try:
        with storage.open(name, "rb") as handle:
            return npz_member_rows(handle, "topk", examples)
    except FileNotFoundError:
        return None


def topk_index_build(*, storage: Storage, example_set_id: int, files: Sequence[IndexedFile],
                     newest_id: int) -> int:
    """Store the index of each sealed segment of these files that has none under its current
    name (and remove that segment's older ones); returns how many were built. Idempotent: two
    workers building one segment at once write the same content."""
    built = 0
    for segment, members in _segments(files):
        name = _name(example_set_id, segment, members)
        if not _sealed(segment, newest_id) or storage.exists(name):
            continue
        block = _block(storage, members)
        # spooled through a temporary file: the block is 128 MB on ImageNet, kept once
        with tempfile.TemporaryFile() as spool:
            np.savez(spool, topk=block)  # first member: its rows are read in place
            del block
            spool.seek(0)
            if not storage.exists(name):
                storage.save(name, File(spool))
        built += 1
        _stale_remove(storage, example_set_id, segment, keep=name)
    return built


def _block(storage: Storage, members: Sequence[IndexedFile]) -> np.ndarray:
    """[example, member, k] of the members' stored top-k, -1 past a member's own k; filled
    file by file (widened and retyped when a file needs it: a few arrays in memory at most)."""
    block: np.ndarray | None = None
    for i, f in enumerate(members):
        with stored_compact(f.compact, example_set=f.example_set, storage=storage) as arrays:
            top = arrays["topk"]
        if block is None or top.shape[1] > block.shape[2] or \
                np.result_type(block.dtype, top.dtype) != block.dtype:
            wider = np.full((top.shape[0], len(members),
                             max(top.shape[1], 0 if block is None else block.shape[2])), -1,
                            dtype=np.result_type(np.int16, top.dtype,
                                                 *(() if block is None else (block.dtype,))))
            if block is not None:
                wider[:, :, :block.shape[2]] = block
            block = wider
        block[:, i, :top.shape[1]] = top
    assert block is not None, "a segment has at least one member"
    return block


def _stale_remove(storage: Storage, example_set_id: int, segment: int, keep: str) -> None:
    folder = f"{FOLDER}/{example_set_id}"
    prefix = f"{segment:07d}-"
    try:
        _, names = storage.listdir(folder)
    except (FileNotFoundError, NotImplementedError):
        return
    for entry in names:
        if entry.startswith(prefix) and f"{folder}/{entry}" != keep:
            storage.delete(f"{folder}/{entry}")
