"""`GET /healthz`: whether this web process can serve (its database answers).

Answered before every other middleware, so that a container healthcheck or a load balancer
probing `http://127.0.0.1:8000/healthz` gets an answer whatever ALLOWED_HOSTS and the https
redirect (SECURE_SSL_REDIRECT) say about its Host header and scheme. It tells nothing but
"ok" or "unavailable".
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

PATH = "/healthz"


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info != PATH or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except DatabaseError:
            return JsonResponse({"error": {"code": "unavailable",
                                           "message": "the database does not answer"}},
                                status=503)
        return JsonResponse({"status": "ok"})
