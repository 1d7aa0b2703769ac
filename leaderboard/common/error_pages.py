"""What Django itself answers when a request fails before or outside a view: no URL matches
(404), a refused request such as too many form fields (400), a request body that stalled,
came too slowly, ended early or is too large (408, 400, 413: leaderboard/common/request_body.py),
a CSRF or permission refusal
(403), the database or the storage out of reach (503, with Retry-After: a temporary outage,
worth a retry; nothing was stored: an upload's row and files are written together or not at
all, leaderboard/submissions/services.py), any other unhandled error (500). Under /api/ the
answer is JSON in the API's one error shape (docs/api.md §3), like every other API answer;
elsewhere it is Django's page."""

from __future__ import annotations

import sys

from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape
from django.views import defaults

from leaderboard.common.request_body import RequestBodyRefused
from leaderboard.common.storage import storage_error_transient

API_PREFIX = "/api/"
# Seconds a client is asked to wait when the database is out of reach: a restart or a
# fail-over takes about this long.
DATABASE_RETRY_AFTER_SECONDS = 10
# ... and when the storage (an object store) is: its own restart, or a network blip
STORAGE_RETRY_AFTER_SECONDS = 10


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def _error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def _body_refused(request: HttpRequest, exc: RequestBodyRefused) -> HttpResponse:
    """Under /api/ the error shape; a page's script asking for JSON (the submit page's upload
    with its progress bar) gets the page's own `{"errors": [...]}`; a browser, a short page."""
    if _is_api(request):
        return _error(exc.code, exc.message, exc.status)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"errors": [{"field": None, "message": exc.message}]},
                            status=exc.status)
    title = {408: "Upload timed out", 413: "Upload too large"}.get(exc.status,
                                                                  "Upload incomplete")
    return HttpResponse(f"<h1>{title}</h1><p>{escape(exc.message)}.</p>"
                        "<p>Go back to the form and send it again.</p>", status=exc.status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if isinstance(exception, RequestBodyRefused):
        return _body_refused(request, exception)
    if _is_api(request):
        return _error("bad_request", "the request could not be read (too many fields, a bad "
                      "header, or a malformed body)", 400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _error("permission_denied", "you may not do this", 403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _error("not_found", f"no API endpoint at {request.path} (see /api/docs/)", 404)
    return defaults.page_not_found(request, exception)


def _database_unreachable() -> bool:
    """Whether the error being handled is the database out of reach (connection refused or
    lost), not a query the database refused. Django calls handler500 inside its `except`."""
    error = sys.exc_info()[1]
    while error is not None:
        if isinstance(error, (OperationalError, InterfaceError)):
            return True
        if isinstance(error, DatabaseError):
            return False
        error = error.__cause__ or error.__context__
    return False


def _unavailable(request: HttpRequest, code: str, what: str, seconds: int) -> HttpResponse:
    if _is_api(request):
        response: HttpResponse = _error(
            code, f"{what} does not answer; nothing was stored. Try again in {seconds} s", 503)
    else:
        response = HttpResponse(
            f"<h1>Service unavailable</h1><p>{what.capitalize()} does not answer; nothing was "
            f"stored. Try again in {seconds} seconds.</p>", status=503)
    response["Retry-After"] = str(seconds)
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    error = sys.exc_info()[1]
    if error is not None and storage_error_transient(error):
        return _unavailable(request, "storage_unavailable", "the file storage",
                            STORAGE_RETRY_AFTER_SECONDS)
    if _database_unreachable():
        return _unavailable(request, "database_unavailable", "the database",
                            DATABASE_RETRY_AFTER_SECONDS)
    if _is_api(request):
        return _error("internal_error", "the server failed to answer; the error is logged, "
                      "and the request may be retried", 500)
    return defaults.server_error(request)
