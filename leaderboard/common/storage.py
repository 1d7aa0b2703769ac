"""Stored files, read through Django's storage API only.

Uploads, checkpoints, the compact prediction arrays and the compiled label-set versions live
in the storage that `STORAGES["default"]` names (EVALSERVER_STORAGE_BACKEND in
evalserver/settings.py): a folder under MEDIA_ROOT by default, S3 through django-storages by
changing that setting. Nothing else in the project builds a path into the store.

Most readers need only a file object (`storage.open`, `FieldFile.open`; NumPy reads .npz from
one). A library that must have a path on disk (the memory-mapped .npy reader of uploaded
predictions, the sandboxed model runner) gets it from `stored_file_path`: the file itself when
the storage is a local folder, otherwise a temporary copy removed afterwards. A storage says
which by `path()`: Django's contract is that a store without local files raises
NotImplementedError there (S3, and tests/pathless_storage.py).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import numpy as np
from django.core.files.storage import Storage, default_storage
from django.db.models.fields.files import FieldFile


def _name_and_storage(stored: FieldFile | str, storage: Storage | None) -> tuple[str, Storage]:
    if isinstance(stored, FieldFile):
        if not stored.name:
            raise ValueError(f"{stored.field} holds no file")
        return str(stored.name), stored.storage
    return stored, storage or default_storage


@contextmanager
def stored_file_path(stored: FieldFile | str, *, storage: Storage | None = None
                     ) -> Iterator[Path]:
    """A local path to a stored file (a FileField's file, or a name in `storage`, default
    storage when not given), valid inside the `with` block; do not write to it."""
    name, storage = _name_and_storage(stored, storage)
    try:
        local = storage.path(name)
    except NotImplementedError:
        pass
    else:
        yield Path(local)
        return
    with tempfile.TemporaryDirectory(prefix="evalserver-") as folder:
        # the stored name's extension is kept: some readers choose the format by it
        copy = Path(folder) / PurePosixPath(name).name
        with storage.open(name, "rb") as source, open(copy, "wb") as target:
            shutil.copyfileobj(source, target, length=1 << 20)
        yield copy


@contextmanager
def stored_npz(stored: FieldFile | str, *, storage: Storage | None = None
               ) -> Iterator[np.lib.npyio.NpzFile]:
    """A stored .npz opened for reading (no pickles), straight from the storage's file."""
    name, storage = _name_and_storage(stored, storage)
    with storage.open(name, "rb") as handle, np.load(handle, allow_pickle=False) as arrays:
        yield arrays
