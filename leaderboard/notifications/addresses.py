"""Where a webhook may point (docs/api.md, 'Webhook URLs'): http or https only, and a host
whose every address is public. A URL resolving to anything else is refused, when it is saved
and again before every POST (a name may resolve elsewhere later), unless the operator allows
them (EVALSERVER_WEBHOOK_ALLOW_PRIVATE: a receiver on the server's own host, the tests).

"Public" is two tests, both required: `ipaddress`'s `is_global`, and none of the ranges of
`REFUSED_NETWORKS`. The list does not depend on the Python version (what `is_private` and
`is_global` cover has changed between releases: 3.11's `is_private` misses the shared address
space 100.64.0.0/10, where cloud providers put their instance metadata service, and most of
192.0.0.0/24), and it covers the IPv6 forms that carry an IPv4 address a router may deliver
to: 6to4 (2002::/16) and Teredo (2001::/32) are refused whole; an IPv4-mapped address
(::ffff:a.b.c.d) and a NAT64 one (64:ff9b::a.b.c.d, RFC 6052) are judged by the IPv4 address
they carry."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from leaderboard.common.errors import ServiceError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# IANA's special-purpose registries (RFC 6890 and its updates), IPv4 then IPv6, less the few
# ranges meant to be reached publicly; each refused whatever `is_global` says of it.
REFUSED_NETWORKS = tuple(ipaddress.ip_network(network) for network in (
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",  # private (RFC 1918)
    "100.64.0.0/10",  # shared address space (RFC 6598): carrier NAT, cloud metadata services
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local
    "192.0.0.0/24",  # IETF protocol assignments (RFC 6890)
    "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",  # documentation
    "192.88.99.0/24",  # the former 6to4 relay anycast
    "198.18.0.0/15",  # benchmarking
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, and the limited broadcast 255.255.255.255
    "::/96",  # unspecified, loopback (::1) and the deprecated IPv4-compatible addresses
    "64:ff9b:1::/48",  # NAT64 for local use (RFC 8215)
    "100::/64",  # discard-only
    "2001::/23",  # IETF protocol assignments, Teredo (2001::/32) among them
    "2001:db8::/32", "3fff::/20",  # documentation
    "2002::/16",  # 6to4
    "5f00::/16",  # segment routing (SRv6) identifiers
    "fc00::/7",  # unique local
    "fe80::/10", "fec0::/10",  # link-local, the former site-local
    "ff00::/8",  # multicast
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix


def _refused(message: str) -> ServiceError:
    return ServiceError("webhook_url_refused", message, field="url")


def _embedded_ipv4(ip: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped or NAT64 IPv6 address is delivered to."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_public(address: str) -> bool:
    """Whether a webhook may be POSTed to this address (textual, as getaddrinfo gives it)."""
    ip: Address = ipaddress.ip_address(address.split("%", 1)[0])  # not an IPv6 scope id
    ip = _embedded_ipv4(ip) or ip
    return ip.is_global and not any(ip in network for network in REFUSED_NETWORKS
                                    if network.version == ip.version)


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
    refused = sorted({str(info[4][0]) for info in infos if not address_public(str(info[4][0]))})
    if refused:
        raise _refused(f"the host {parts.hostname!r} resolves to an address that is not public "
                       f"(loopback, private, shared, link-local or special-purpose: "
                       f"{', '.join(refused)})")
    return [str(info[4][0]) for info in infos]
