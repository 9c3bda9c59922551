"""Where a server is: on this machine, on a private network, or on the public internet.

The editor asks before a document first goes to a non-loopback server, and again before plain
http to a public one; loopback and private (RFC 1918, link-local, unique-local) addresses need no
confirmation for unencrypted http. A name is resolved (``*.localhost`` too: it may resolve
anywhere); a name that does not resolve counts as public (the request will fail anyway, with its
own message). A name may resolve elsewhere on the next connection (DNS rebinding), so what is
found here only chooses the question to ask: ``peer_kind`` classifies the address a connection
actually reached, which is what ``connection`` checks the user's answers and the API key against.
"""

from __future__ import annotations

import ipaddress
import socket

LOOPBACK, PRIVATE, PUBLIC = "loopback", "private", "public"  # from the nearest to the farthest
WHERE = {LOOPBACK: "on this machine", PRIVATE: "on your network", PUBLIC: "on the internet"}


def _parsed(url: str):
    import httpx  # here, not above: the editor imports this module before its window shows

    return httpx.URL(url)


def literal_kind(url: str) -> str | None:
    """The kind of a server named by its address (or as ``localhost``): known without a lookup.
    None for a host name, which ``address_kind`` resolves."""
    host = _parsed(url).host
    if host == "localhost":
        return LOOPBACK
    try:
        return _kind_of_addresses([ipaddress.ip_address(host)])
    except ValueError:
        return None


def address_kind(url: str) -> str:
    """The kind of ``url``'s server; a host name is resolved, which can take as long as the DNS
    does: call it off the UI thread."""
    kind = literal_kind(url)
    if kind is not None:
        return kind
    try:
        infos = socket.getaddrinfo(_parsed(url).host, None)
    except (OSError, UnicodeError):
        return PUBLIC
    return _kind_of_addresses([ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos])


def _kind_of_addresses(addresses: list[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> str:
    if addresses and all(address.is_loopback for address in addresses):
        return LOOPBACK
    if addresses and all(address.is_private or address.is_loopback for address in addresses):
        return PRIVATE
    return PUBLIC


def peer_kind(address: str) -> str:
    """The kind of the address a socket is connected to (``getpeername()[0]``)."""
    return _kind_of_addresses([ipaddress.ip_address(address.split("%")[0])])


def within(kind: str, farthest: str) -> bool:
    """An address of ``kind`` is no farther than ``farthest`` (loopback, then private, then public)."""
    order = (LOOPBACK, PRIVATE, PUBLIC)
    return order.index(kind) <= order.index(farthest)


def is_encrypted(url: str) -> bool:
    return _parsed(url).scheme == "https"
