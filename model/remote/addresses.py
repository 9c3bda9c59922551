"""Where a server is: on this machine, on a private network, or on the public internet.

The editor asks before a document first goes to a non-loopback server, and again before plain
http to a public one; loopback and private (RFC 1918, link-local, unique-local) addresses need no
confirmation for unencrypted http. A name is resolved; a name that does not resolve counts as
public (the request will fail anyway, with its own message). ``peer_kind`` classifies the address
a connection actually reached, which is what the API key's guard in ``connection`` trusts.
"""

from __future__ import annotations

import ipaddress
import socket

import httpx

LOOPBACK, PRIVATE, PUBLIC = "loopback", "private", "public"


def literal_kind(url: str) -> str | None:
    """The kind of a server named by its address (or as localhost): known without a lookup.
    None for a host name, which ``address_kind`` resolves."""
    host = httpx.URL(url).host
    if host == "localhost" or host.endswith(".localhost"):
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
        infos = socket.getaddrinfo(httpx.URL(url).host, None)
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


def is_encrypted(url: str) -> bool:
    return httpx.URL(url).scheme == "https"
