"""Pieces every area of the API shares: the error body for the schema, coded fields."""

from __future__ import annotations

import re
from typing import Any, NoReturn

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request

ERROR_DESCRIPTIONS = {
    400: ("Invalid input; `error.code` says what and `error.field` where (`bad_request`: a "
          "request refused before any view, e.g. too many fields or an unknown Host)."),
    401: ("No valid credentials (`not_authenticated`), or a wrong or revoked token "
          "(`authentication_failed`, on every endpoint, public ones included)."),
    403: ("Authenticated, but not allowed (`permission_denied`, `not_owner`), or a signed-in "
          "session without its CSRF token."),
    404: ("No such object, or one the caller may not see (`not_found`); also an unknown page "
          "of a list, or a `?format=` the endpoint does not render."),
    405: "Not a method of this path (`method_not_allowed`; OPTIONS included).",
    406: "The `Accept` header asks for a type the endpoint does not render (`not_acceptable`).",
    408: ("The request body stopped arriving, or did not arrive whole in time "
          "(`request_timeout`); nothing was stored: send it again."),
    409: ("In conflict with the current state (`already_voted`, `already_decided`), or past a "
          "limit of what one user may have (`webhook_endpoint_limit`)."),
    413: ("An uploaded file, or a body announced by its Content-Length, is over the size cap "
          "(`file_too_large`)."),
    415: "The body's media type is not one the operation reads (`unsupported_media_type`).",
    429: ("Too many requests (`throttled`, with `Retry-After`): a rate limit (see the "
          "`RateLimit-*` headers), too many failed logins or too many webhook test events; or "
          "the daily submission quota (`quota_exceeded`)."),
    500: ("The server failed (`internal_error`); the error is logged, and the request may be "
          "retried."),
    503: ("The database or the file storage does not answer (`database_unavailable`, "
          "`storage_unavailable`); nothing was stored. Retry after the `Retry-After` header's "
          "seconds."),
}


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="short_snake_case, stable: branch on this")
    message = serializers.CharField(help_text="plain words for people")
    field = serializers.CharField(required=False, help_text="the field at fault, when one is")
    row = serializers.IntegerField(
        required=False, help_text="a refused predictions file: the row (0-based) at fault, "
                                  "when the problem is in one row")
    column = serializers.IntegerField(
        required=False, help_text="a refused predictions file: the column (0-based) at fault, "
                                  "when the problem is in one cell")


class ErrorSerializer(serializers.Serializer):
    """The one error shape of every 4xx and 5xx answer."""

    error = ErrorDetailSerializer()


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """Schema entries for the error statuses an operation can answer."""
    return {
        code: OpenApiResponse(response=ErrorSerializer, description=ERROR_DESCRIPTIONS[code])
        for code in statuses
    }


class CodedCharField(serializers.CharField):
    """A required text field whose absence (missing, blank or null) fails with its own error
    code, e.g. `missing_model_name`, instead of DRF's generic `required` / `blank`."""

    def __init__(self, *, missing_code: str, missing_message: str, **kwargs: Any) -> None:
        self.missing_code = missing_code
        self.missing_message = missing_message
        super().__init__(**kwargs)

    def fail(self, key: str, **kwargs: Any) -> NoReturn:
        if key in ("required", "blank", "null"):
            raise serializers.ValidationError(self.missing_message, code=self.missing_code)
        super().fail(key, **kwargs)


class QueryIntegerField(serializers.IntegerField):
    """An integer of a query string, written as one: ASCII digits with an optional minus.
    DRF's IntegerField also takes "1.0", " 7" and other scripts' digits ("٣"), which the
    schema's `type: integer` calls invalid (docs/api.md §3: invalid input is 400)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and not _QUERY_INTEGER.fullmatch(data):
            self.fail("invalid")
        return super().to_internal_value(data)


_QUERY_INTEGER = re.compile(r"-?[0-9]+")


def signed_in_user(request: Request) -> User:
    """The caller, in a view whose permission already demands an authenticated user."""
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise NotAuthenticated()
    return user
