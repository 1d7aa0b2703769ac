"""Uploads: a size cap enforced while an upload streams in, before anything is kept, and the
temporary files of uploads that did not finish.

Django's own DATA_UPLOAD_MAX_MEMORY_SIZE does not cover files; checking `file.size` after
parsing is too late (the whole body was already written to disk). `SizeLimitUploadHandler`,
first in FILE_UPLOAD_HANDLERS, counts bytes as they arrive and stops the upload at the cap; the
view then answers 413 with the `file_too_large` error.

A file over FILE_UPLOAD_MAX_MEMORY_SIZE is written to a temporary file in FILE_UPLOAD_TEMP_DIR
(EVALSERVER_UPLOAD_TEMP_DIR, a folder of its own) as it arrives. Django removes it when the
request ends normally, but not when the body stops part-way (a stalled or vanished client,
leaderboard/common/request_body.py): `UploadTempFilesMiddleware` closes, and so removes, every
temporary file a request opened once it has its response. A web process killed mid-upload
leaves its files behind: `upload_temp_files_remove` (the hourly leaderboard.tasks.cpu.
remove_stray_upload_files) removes those no request can still be writing.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import (
    FileUploadHandler,
    StopUpload,
    TemporaryFileUploadHandler,
)
from django.http import HttpRequest, HttpResponse, QueryDict
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.datastructures import MultiValueDict

from leaderboard.common.request_body import FORM_OVERHEAD_BYTES

# A temporary upload file untouched this long after the upload deadline belongs to no live
# request: its body stopped arriving long ago, and storing a received file takes minutes at most.
STRAY_MARGIN_SECONDS = 2 * 60 * 60


class SizeLimitUploadHandler(FileUploadHandler):
    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        self.limit: int = settings.EVALSERVER_MAX_UPLOAD_BYTES
        self.received = 0
        self.current_file = ""

    def handle_raw_input(self, input_data: Any, META: Any, content_length: int, boundary: Any,
                         encoding: Any = None) -> tuple[QueryDict, MultiValueDict[str, Any]] | None:
        # A declared body larger than the cap (plus room for form fields) is refused unread:
        # returning empty data ends the parse (StopUpload is only caught once parsing started).
        if content_length and content_length > self.limit + FORM_OVERHEAD_BYTES:
            mark_too_large(self.request, "the request body")
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def new_file(self, field_name: str, *args: Any, **kwargs: Any) -> None:
        super().new_file(field_name, *args, **kwargs)
        self.current_file = field_name
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > self.limit:
            mark_too_large(self.request, self.current_file)
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def mark_too_large(request: Any, what: str) -> None:
    if request is not None:
        request.upload_too_large = what


def upload_too_large(request: Any) -> str | None:
    """The field (or "the request body") that went over the cap, if one did."""
    inner = getattr(request, "_request", request)  # DRF wraps the Django request
    return getattr(inner, "upload_too_large", None)


def _csrf_passed(request: HttpRequest) -> HttpResponse:
    return HttpResponse()


def upload_csrf_failure(request: HttpRequest) -> HttpResponse | None:
    """Django's CSRF check, run by hand in a `csrf_exempt` upload view once the body is parsed:
    an upload the size cap stopped has no token left to check, and gets its form with the
    size error instead of a bare 403 (nothing was stored, so skipping the check then is
    safe). None when the check passes, else the 403 response."""
    return CsrfViewMiddleware(_csrf_passed).process_view(request, _csrf_passed, (), {})


class TrackedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Django's handler for files written to disk, recording each file on its request so that
    `UploadTempFilesMiddleware` can remove it however the request ends."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        # created when first needed, so that a folder removed meanwhile fails no upload
        Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
        super().new_file(*args, **kwargs)
        request: Any = self.request
        if request is not None:
            if getattr(request, "upload_temp_files", None) is None:
                request.upload_temp_files = []
            request.upload_temp_files.append(self.file)


class UploadTempFilesMiddleware:
    """Closes every temporary upload file of the request once it has its response: closing
    removes it (a file already stored by moving it is gone, and closing is then a no-op)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            return self.get_response(request)
        finally:
            opened: list[UploadedFile] = getattr(request, "upload_temp_files", [])
            for file in opened:
                file.close()


def upload_temp_files_remove(*, now: float | None = None) -> list[str]:
    """Remove the temporary upload files of FILE_UPLOAD_TEMP_DIR that no request can still be
    writing (untouched for EVALSERVER_UPLOAD_DEADLINE plus STRAY_MARGIN_SECONDS): those of a
    web process killed mid-upload. Only Django's temporary upload files (`tmp*.upload*`) are
    touched, so a folder shared with anything else is safe. Returns the names removed."""
    folder = Path(settings.FILE_UPLOAD_TEMP_DIR)
    cutoff = (time.time() if now is None else now) - (
        settings.EVALSERVER_UPLOAD_DEADLINE + STRAY_MARGIN_SECONDS)
    removed = []
    try:
        candidates = sorted(folder.glob("tmp*.upload*"))
    except OSError:
        return []
    for path in candidates:
        try:
            found = path.lstat()  # a link is not followed, nor removed
            if not stat.S_ISREG(found.st_mode) or found.st_mtime >= cutoff:
                continue
            os.remove(path)
        except FileNotFoundError:
            continue  # finished or removed meanwhile
        removed.append(path.name)
    return removed
