"""The one exception a service raises to refuse a request, whatever the caller (API, page,
command): a short code, plain words, the field at fault, and the HTTP status it maps to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ServiceError(Exception):
    code: str
    message: str
    field: str | None = None
    http_status: int = 400

    def __str__(self) -> str:
        return self.message
