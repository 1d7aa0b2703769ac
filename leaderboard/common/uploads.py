"""A size cap enforced while an upload streams in, before anything is kept.

Django's own DATA_UPLOAD_MAX_MEMORY_SIZE does not cover files; checking `file.size` after
parsing is too late (the whole body was already written to disk). This handler, first in
FILE_UPLOAD_HANDLERS, counts bytes as they arrive and stops the upload at the cap; the view
then answers 413 with the `file_too_large` error.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, HttpResponse, QueryDict
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.datastructures import MultiValueDict


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
        if content_length and content_length > self.limit + 1_048_576:
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
