"""The API's one error shape: {"error": {"code": ..., "message": ..., "field": ...}}."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.files.uploadhandler import StopUpload
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from leaderboard.common.errors import ServiceError
from leaderboard.common.request_body import RequestBodyRefused
from leaderboard.common.uploads import upload_too_large


def error_response(code: str, message: str, *, field: str | None = None,
                   http_status: int = status.HTTP_400_BAD_REQUEST,
                   details: dict[str, Any] | None = None) -> Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if field:
        body["field"] = field
    body.update(details or {})
    return Response({"error": body}, status=http_status)


def file_too_large_error(what: str) -> ServiceError:
    """The 413 answer when the streaming size cap stopped an upload (leaderboard/common/uploads.py);
    `what` is the file field, or "the request body" when its declared length was too big."""
    field = None if what == "the request body" else what
    return ServiceError(
        "file_too_large",
        f"{what if field is None else repr(what)} is larger than the upload limit of "
        f"{settings.EVALSERVER_MAX_UPLOAD_BYTES} bytes",
        field=field, http_status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)


def _first_validation_error(detail: Any, prefix: str = "") -> tuple[str, str, str | None]:
    """(code, message, field) of the first problem in a DRF ValidationError detail."""
    if isinstance(detail, dict):
        for name, value in detail.items():
            field = name if name != "non_field_errors" else None
            code, message, inner = _first_validation_error(value, name)
            return code, message, inner or field
    if isinstance(detail, list) and detail:
        return _first_validation_error(detail[0], prefix)
    code = getattr(detail, "code", "invalid") or "invalid"
    message = str(detail)
    if prefix and prefix != "non_field_errors":
        message = f"{prefix}: {message}"
    return str(code), message, None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, StopUpload):
        # The size cap stopped the upload in a way the parser did not absorb: same 413.
        exc = file_too_large_error(upload_too_large(context.get("request")) or "the request body")
    if isinstance(exc, RequestBodyRefused):  # stalled, too slow, cut short, too large
        return error_response(exc.code, exc.message, http_status=exc.status)
    if isinstance(exc, ServiceError):  # submissions, review, ground truth: their own status
        refused = error_response(exc.code, exc.message, field=exc.field,
                                 http_status=exc.http_status, details=exc.details)
        if exc.http_status == 429 and "retry_after" in exc.details:  # as DRF's throttles say
            refused["Retry-After"] = str(exc.details["retry_after"])
        return refused
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if isinstance(exc, PermissionDenied):  # a service's or selector's refusal, with its words
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    if isinstance(exc, exceptions.ValidationError):
        code, message, field = _first_validation_error(exc.detail)
        if code == "invalid":
            code = "invalid_input"
    else:
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else str(exc.default_code)
        message, field = str(exc.detail), None
    response.data = {"error": {"code": str(code), "message": message,
                               **({"field": field} if field else {})}}
    return response
