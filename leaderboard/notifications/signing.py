"""The signature of a webhook's body (docs/api.md, 'Verifying a webhook'): HMAC-SHA256 with
the endpoint's secret over "<timestamp>.<body>", so that a receiver can check both who sent it
and when (and refuse a replay of an old one)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "X-Evalserver-Signature"
TIMESTAMP_HEADER = "X-Evalserver-Timestamp"
EVENT_HEADER = "X-Evalserver-Event"
DELIVERY_HEADER = "X-Evalserver-Delivery"


def webhook_secret_new() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def webhook_signature(*, secret: str, timestamp: str, body: bytes) -> str:
    """The header's value: "sha256=" and the hex digest."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()
