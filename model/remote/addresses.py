"""Where a server is: on this machine, on a private network, or on the public internet.

The editor asks before a document first goes to a non-loopback server, and again before plain
http to a public one; loopback and private (RFC 1918, link-local, unique-local) addresses need no
confirmation for unencrypted http. A name is resolved; a name that does not resolve counts as
public (the request will fail anyway, with its own message).
"""

from __future__ import annotations

import ipaddress
import socket

import httpx

LOOPBACK, PRIVATE, PUBLIC = "loopback", "private", "public"


def address_kind(url: str) -> str:
    host = httpx.URL(url).host
    if host == "localhost" or host.endswith(".localhost"):
        return LOOPBACK
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return PUBLIC
        addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    if addresses and all(address.is_loopback for address in addresses):
        return LOOPBACK
    if addresses and all(address.is_private or address.is_loopback for address in addresses):
        return PRIVATE
    return PUBLIC


def is_encrypted(url: str) -> bool:
    return httpx.URL(url).scheme == "https"
