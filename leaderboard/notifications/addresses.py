"""Where a webhook may point (docs/api.md, 'Webhook URLs'): http or https only, and a host
whose every address is public. A URL resolving to a loopback, private, link-local, multicast,
unspecified or reserved address is refused, when it is saved and again before every POST (a
name may resolve elsewhere later), unless the operator allows them
(EVALSERVER_WEBHOOK_ALLOW_PRIVATE: a receiver on the server's own host, the tests)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from leaderboard.common.errors import ServiceError


def _refused(message: str) -> ServiceError:
    return ServiceError("webhook_url_refused", message, field="url")


def _address_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 scope id is not part of it
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is loopback
    return not (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast
                or ip.is_unspecified or ip.is_reserved)


def webhook_url_check(url: str) -> list[str]:
    """Raise ServiceError("webhook_url_refused") unless `url` may receive webhooks; return
    the addresses its host resolved to (none looked up when private ones are allowed), which
    the POST then connects to (leaderboard/notifications/posting.py), so that a name cannot
    resolve to a public address here and a private one a moment later."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise _refused("a webhook URL must start with http:// or https://")
    if not parts.hostname:
        raise _refused("a webhook URL needs a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise _refused("the webhook URL's port is not valid") from None
    if settings.EVALSERVER_WEBHOOK_ALLOW_PRIVATE:
        return []
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise _refused(f"the host {parts.hostname!r} does not resolve") from None
    private = sorted({str(info[4][0]) for info in infos if not _address_public(str(info[4][0]))})
    if private:
        raise _refused(f"the host {parts.hostname!r} resolves to a loopback, private, "
                       f"link-local or reserved address ({', '.join(private)})")
    return [str(info[4][0]) for info in infos]
