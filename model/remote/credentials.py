"""The API key of a server: the ``SFUMATO_API_KEY`` environment variable, else the OS keyring.

Keys never go into the settings file. In the keyring a key is stored under the service
``sfumato`` and the server's origin (``https://host:port``), so each server has its own. A key is
cleaned once, wherever it comes from (``clean_api_key``): surrounding whitespace goes, and a key
that an HTTP header cannot carry is refused without being shown. Neither a key nor a URL's
password ever appears in a message (``shown_url``). httpx is imported where a URL is parsed: the
editor's settings and AI menu import this module before the window shows, and httpx (with the
command-line tool it loads when click and rich are installed) took a third of that time.
"""

from __future__ import annotations

import os
import re

from sfumato.model.api import EngineError

ENV_VARIABLE = "SFUMATO_API_KEY"
KEYRING_SERVICE = "sfumato"
HEADER_SAFE = re.compile(r"[\x21-\x7e]+")  # visible ASCII: what a Bearer token may hold


def clean_api_key(key: str | None) -> str | None:
    """``key`` without surrounding whitespace (None when nothing is left); EngineError, which
    never shows the key, when a space, control or non-ASCII character is inside it."""
    key = (key or "").strip()
    if key and not HEADER_SAFE.fullmatch(key):
        raise EngineError(
            "the API key holds a space, a control or a non-ASCII character, which an HTTP header cannot carry; "
            f"nothing was sent (check {ENV_VARIABLE} or Settings > Server)"
        )
    return key or None


def shown_url(url: str) -> str:
    """``url`` without its user name and password, for messages and the settings file."""
    if "@" not in url:  # no user name or password to take out (and a model spec such as "embedded")
        return url
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return re.sub(r"//[^/@\s]*@", "//", url)
    return str(parsed.copy_with(userinfo=b"")) if parsed.userinfo else url


def origin(url: str) -> str:
    import httpx

    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port or (443 if parsed.scheme == 'https' else 80)}"


def api_key_for(url: str) -> str | None:
    """The key for ``url``'s server, cleaned; None when there is none."""
    key = os.environ.get(ENV_VARIABLE)
    if key and key.strip():
        return clean_api_key(key)
    try:
        import keyring

        stored = keyring.get_password(KEYRING_SERVICE, origin(url))
    except Exception:  # noqa: BLE001 - no keyring backend on this system: no stored key
        return None
    return clean_api_key(stored)


def store_api_key(url: str, key: str | None) -> None:
    """Save ``key`` for ``url``'s server in the keyring, cleaned (None or "" deletes it)."""
    key = clean_api_key(key)
    try:
        import keyring

        if key:
            keyring.set_password(KEYRING_SERVICE, origin(url), key)
        elif keyring.get_password(KEYRING_SERVICE, origin(url)) is not None:
            keyring.delete_password(KEYRING_SERVICE, origin(url))
    except Exception as error:  # noqa: BLE001 - keyring backends raise their own types
        raise EngineError(f"the OS keyring cannot store the key ({error}); use {ENV_VARIABLE} instead") from None
