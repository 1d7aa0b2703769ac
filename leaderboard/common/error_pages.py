"""What Django itself answers when a request fails before or outside a view: no URL matches
(404), a refused request such as too many form fields (400), a CSRF or permission refusal
(403), an unhandled error such as a database outage (500). Under /api/ the answer is JSON in
the API's one error shape (docs/api.md §3), like every other API answer; elsewhere it is
Django's page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def _error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
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


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return _error("internal_error", "the server failed to answer; the error is logged, "
                      "and the request may be retried", 500)
    return defaults.server_error(request)
