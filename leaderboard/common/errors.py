"""The one exception a service raises to refuse a request, whatever the caller (API, page,
command): a short code, plain words, the field at fault, and the HTTP status it maps to."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass
class ServiceError(Exception):
    code: str
    message: str
    field: str | None = None
    http_status: int = 400
    # More members of the API's error body, where one input has more to say (a prediction
    # file's `row` and `column`); pages show the message only.
    # (`dataclasses.field`: this class has a member named `field`)
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        return self.message
