"""A resolver the test controls: one host name resolves to the address the test gives
(socket.getaddrinfo replaced for that name only; every other name, the test Redis's among
them, resolves as ever). Nothing is looked up or sent beyond loopback."""

from __future__ import annotations

import socket
from typing import Any

import pytest

_REAL_GETADDRINFO = socket.getaddrinfo


def name_resolving(monkeypatch: pytest.MonkeyPatch, host: str, address: str) -> None:
    """From now on in this test, `host` resolves to `address` alone."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET

    def getaddrinfo(name: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if name != host:
            return _REAL_GETADDRINFO(name, port, *args, **kwargs)
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
