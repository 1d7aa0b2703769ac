"""The OpenAPI schema's error responses: the statuses any operation can answer, declared once.

Each view declares the errors of its own logic (`error_responses(...)` in its `extend_schema`:
a validation 400, a permission 403, a missing object's 404, 409, 413, 429). Some answers come
from the framework around every view instead, and this postprocessing hook adds them to every
operation (docs/api.md §3), all in the one error shape:
- 400 `bad_request`: Django refused the request before the view (too many query or form
  fields, a Host header not in ALLOWED_HOSTS);
- 401 `authentication_failed`: a wrong or revoked token is refused on every endpoint, public
  ones included (DRF authenticates before it checks permissions);
- 403 on a method that writes: a signed-in session without its CSRF token;
- 404: `?format=` naming no renderer of the endpoint (DRF's format override);
- 405: a method the path does not answer (OPTIONS included: no metadata);
- 406: an `Accept` header the endpoint cannot satisfy;
- 429 `throttled`, with `Retry-After`: a rate limit (leaderboard/common/throttling.py);
- 408 where a body is read: it stopped arriving, or came too slowly (leaderboard/common/
  request_body.py);
- 415 where a body is read: a media type the operation has no parser for;
- 500 `internal_error`: an unhandled failure (leaderboard/common/error_pages.py);
- 503 `database_unavailable` or `storage_unavailable`, with `Retry-After`: the database or the
  file storage out of reach (same module).

It also marks every optional query parameter `allowEmptyValue`: DRF reads an empty value of
an optional field (`?sort=`, `?page=`) as no value at all, its default.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from leaderboard.common.api import ERROR_DESCRIPTIONS, ErrorSerializer

EVERY_OPERATION = (400, 401, 404, 405, 406, 429, 500, 503)
WRITING_METHODS = frozenset({"post", "put", "patch", "delete"})
ERROR_SCHEMA_NAME = "Error"


def common_error_statuses(method: str, operation: dict[str, Any]) -> tuple[int, ...]:
    """The statuses the framework may answer for this operation, whatever its view does."""
    statuses = list(EVERY_OPERATION)
    if method in WRITING_METHODS:
        statuses.append(403)
    if "requestBody" in operation:
        statuses += [408, 415]
    return tuple(sorted(statuses))


def document_common_errors(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry: adds the statuses of
    `common_error_statuses` to every operation that does not declare them already, and
    `allowEmptyValue` to its optional query parameters."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    if ERROR_SCHEMA_NAME not in components:  # only when no view referenced ErrorSerializer
        raise RuntimeError(f"the schema has no {ERROR_SCHEMA_NAME} component for "
                           f"{ErrorSerializer.__name__}")
    content = {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{ERROR_SCHEMA_NAME}"}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in ("get", "put", "post", "patch", "delete"):
                continue  # path-level keys such as `parameters`
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
            responses = operation.setdefault("responses", {})
            for status in common_error_statuses(method, operation):
                responses.setdefault(str(status), {
                    "content": content, "description": ERROR_DESCRIPTIONS[status]})
            operation["responses"] = dict(sorted(responses.items()))
    return result


class SchemaView(SpectacularAPIView):
    """/api/schema/: the schema in YAML or JSON; its errors (an unknown `?format=`, an
    `Accept` it cannot satisfy) in JSON, in the error shape, like every other API answer
    (DRF would render them with the schema's YAML renderer)."""

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response
