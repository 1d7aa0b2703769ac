"""How a submission's files are laid out in the storage, and read back
(docs/operators/many-machines.md, "Files in object storage").

On an object store each file is a request, and a request costs both ends about as much CPU as
scoring a small example set (bench/cluster.py --s3), so a submission of predictions is stored as
few files as its readers allow:

- Its uploaded files: on a filesystem storage one file each (`<id>-<example set><ext>`), which the
  scoring worker memory-maps in place when it is a .npy; on an object store one uncompressed
  zip (`<id>.zip`), a member `<example set><ext>` each, which every SubmissionFile row names. The
  worker then fetches one object, not one per example set.
- Its compact arrays (workers/scoring/compact.py): one .npz for the submission
  (`compact/<id>.npz`), each example set's arrays under `<example set>/`, every row naming it.

Files stored before these layouts (one upload and one compact file per example set) are read as
they are; a checkpoint's outputs stay one .npy an example set (submissions/checkpoints.py).
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from django.core.files.base import ContentFile, File
from django.core.files.storage import Storage

from leaderboard.common.storage import (
    object_store,
    storage_meanwhile,
    stored_copy,
    stored_file_paths,
    stored_npz,
)
from leaderboard.submissions.models import SubmissionFile
from workers.scoring.compact import compact_arrays

# no upload has it (workers/scoring/predictions/__init__.py SUPPORTED_EXTENSIONS)
BUNDLE_SUFFIX = ".zip"
SPOOLED_IN_MEMORY = 8 << 20  # a zip of uploads fetched to read is kept in memory up to this


def upload_member(row: SubmissionFile) -> str:
    """A row's member in its submission's zip of uploads: `<example set><ext>` (Django keeps an
    upload's extension when it cuts its name to 255 characters: original_name has it)."""
    return f"{row.example_set.slug}{PurePosixPath(row.original_name).suffix.lower()}"


def uploads_store(*, submission_id: int, rows: Sequence[SubmissionFile],
                  uploads: Sequence[Any]) -> list[str]:
    """Store a new submission's uploaded files (each row's, in order), set each row's `file`
    (the rows are not saved here) and return the names stored; one zip on an object store,
    one file a row otherwise (the module's docstring)."""
    storage = SubmissionFile._meta.get_field("file").storage
    if len(rows) < 2 or not object_store(storage):
        for row, upload in zip(rows, uploads, strict=True):
            row.file.save(f"{submission_id}-{upload_member(row)}", File(upload), save=False)
        return [str(row.file.name) for row in rows]
    # spooled through a temporary file: uploads may be hundreds of MB (ImageNet's scores)
    with tempfile.TemporaryFile() as spool:
        with zipfile.ZipFile(spool, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for row, upload in zip(rows, uploads, strict=True):
                with archive.open(upload_member(row), "w", force_zip64=True) as member:
                    for chunk in File(upload).chunks():
                        member.write(chunk)
        spool.seek(0)
        first = rows[0]
        first.file.save(f"{submission_id}{BUNDLE_SUFFIX}", File(spool), save=False)
    for row in rows[1:]:
        row.file.name = first.file.name
    return [str(first.file.name)]


def _bundled(row: SubmissionFile) -> bool:
    return str(row.file.name).endswith(BUNDLE_SUFFIX)


@contextmanager
def uploaded_file_paths(rows: Sequence[SubmissionFile]) -> Iterator[list[Path]]:
    """A local path to each row's uploaded file, in order, valid inside the `with` block (do
    not write to them): the stored file itself on a filesystem storage, a copy from an
    object store; a zip's members extracted, each zip fetched once. The rows need their
    example_set."""
    bundles = {str(row.file.name) for row in rows if _bundled(row)}
    if not bundles:
        with stored_file_paths([row.file for row in rows]) as paths:
            yield paths
        return
    storage = rows[0].file.storage
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evalserver-")))
        archives = {name: stack.enter_context(_stored_zip(name, storage))
                    for name in sorted(bundles)}
        singles = [row for row in rows if not _bundled(row)]
        single_paths = iter(stack.enter_context(stored_file_paths([r.file for r in singles])))
        paths = []
        for i, row in enumerate(rows):
            if not _bundled(row):
                paths.append(next(single_paths))
                continue
            member = upload_member(row)
            target = folder / f"{i}{PurePosixPath(member).suffix}"  # the reader goes by it
            with archives[str(row.file.name)].open(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, length=1 << 20)
            paths.append(target)
        yield paths


@contextmanager
def _stored_zip(name: str, storage: Storage) -> Iterator[zipfile.ZipFile]:
    # in memory up to a size, then on disk: a zip of ImageNet scores is hundreds of MB
    with tempfile.SpooledTemporaryFile(max_size=SPOOLED_IN_MEMORY) as copy:
        stored_copy(name, storage=storage, target=copy)  # type: ignore[arg-type]
        with zipfile.ZipFile(copy) as archive:
            yield archive


@contextmanager
def compacts_storing(*, rows: Sequence[SubmissionFile],
                     arrays: Mapping[str, Mapping[str, np.ndarray]]) -> Iterator[None]:
    """Store a submission's compact arrays (`arrays`: by example set slug) as its one compact
    file (replacing a retried task's) while the block runs (on an object store the request
    waits beside the scoring), then record its name on each row."""
    field = SubmissionFile._meta.get_field("compact")
    storage = field.storage
    buffer = io.BytesIO()
    np.savez(buffer, **compact_arrays(arrays))  # type: ignore[arg-type]
    name = field.generate_filename(rows[0], f"{rows[0].submission_id}.npz")
    # Removed first: a retried task's recorded files. An object store's save replaces the
    # name itself; a filesystem storage's would save beside a file there under another name,
    # so the name goes too (a file there is an earlier attempt's, this submission's, which
    # died before recording it).
    recorded = {str(row.compact.name) for row in rows if row.compact}
    removed = sorted(recorded - {name} if object_store(storage) else recorded | {name})
    stored: list[str] = []

    def store() -> None:  # no database here: a thread
        for previous in removed:
            storage.delete(previous)
        stored.append(storage.save(name, ContentFile(buffer.getvalue())))

    try:
        with storage_meanwhile(storage, store):
            yield
    finally:
        if stored:  # recorded even when the block failed: the file is then not left behind
            SubmissionFile.objects.filter(pk__in=[row.pk for row in rows]).update(
                compact=stored[0])
            for row in rows:
                row.compact.name = stored[0]


class ExampleSetArrays(Mapping[str, np.ndarray]):
    """One example set's arrays in a compact file, by their own names (`topk`, ...)."""

    def __init__(self, archive: np.lib.npyio.NpzFile, example_set: str) -> None:
        self._archive = archive
        prefix = f"{example_set}/"
        ours = [name for name in archive.files if name.startswith(prefix)]
        # a file of one example set's arrays (stored before the one-file layout): plain names
        self._names = ({name.removeprefix(prefix): name for name in ours} if ours else
                       {name: name for name in archive.files if "/" not in name})

    def __getitem__(self, array: str) -> np.ndarray:
        return self._archive[self._names[array]]

    def __contains__(self, array: object) -> bool:  # by name: Mapping's would read the array
        return array in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@contextmanager
def stored_compact(stored: Any, *, example_set: str, storage: Storage | None = None
                   ) -> Iterator[ExampleSetArrays]:
    """An example set's arrays in a stored compact file (a FileField's file, or a name in
    `storage`, the compact field's when not given), read as they are asked."""
    storage = storage or SubmissionFile._meta.get_field("compact").storage
    with stored_npz(stored, storage=storage) as archive:
        yield ExampleSetArrays(archive, example_set)
