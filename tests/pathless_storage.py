"""A storage with no local paths, like S3 through django-storages, for the tests that run the
server on one (EVALSERVER_STORAGE_BACKEND=tests.pathless_storage.PathlessStorage).

The bytes sit in MEDIA_ROOT/pathless-store/, kept by a FileSystemStorage it wraps, so a worker
process can share them; but only the storage API reaches them (open, save, exists, delete,
size, listdir, url, times), and `path()` is Django's default for a store without local files:
it raises NotImplementedError. A file written or read by a path built from MEDIA_ROOT is not
in the store, so code that goes around the storage API fails here."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage

FOLDER = "pathless-store"


class PathlessStorage(Storage):
    def __init__(self, **options: Any) -> None:
        self._options = options

    @property
    def _disk(self) -> FileSystemStorage:
        # made on each use, so it follows MEDIA_ROOT when a test changes it
        root = Path(settings.MEDIA_ROOT)
        return FileSystemStorage(location=root / FOLDER, base_url=f"/media/{FOLDER}/",
                                 **self._options)

    def _open(self, name: str, mode: str = "rb") -> File[Any]:
        return self._disk.open(name, mode)

    def _save(self, name: str, content: IO[Any]) -> str:
        return self._disk.save(name, content)

    def exists(self, name: str) -> bool:
        return self._disk.exists(name)

    def delete(self, name: str) -> None:
        self._disk.delete(name)

    def size(self, name: str) -> int:
        return self._disk.size(name)

    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        return self._disk.listdir(path)

    def url(self, name: str | None) -> str:
        return self._disk.url(name)

    def get_modified_time(self, name: str) -> datetime:
        return self._disk.get_modified_time(name)
