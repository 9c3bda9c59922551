"""The API key of a server: the ``SFUMATO_API_KEY`` environment variable, else the OS keyring.

Keys never go into the settings file. In the keyring a key is stored under the service
``sfumato`` and the server's origin (``https://host:port``), so each server has its own.
"""

from __future__ import annotations

import os

import httpx

from model.api import EngineError

ENV_VARIABLE = "SFUMATO_API_KEY"
KEYRING_SERVICE = "sfumato"


def origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port or (443 if parsed.scheme == 'https' else 80)}"


def api_key_for(url: str) -> str | None:
    key = os.environ.get(ENV_VARIABLE)
    if key:
        return key
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, origin(url)) or None
    except Exception:  # noqa: BLE001 - no keyring backend on this system: no stored key
        return None


def store_api_key(url: str, key: str | None) -> None:
    """Save ``key`` for ``url``'s server in the keyring (None or "" deletes it)."""
    try:
        import keyring

        if key:
            keyring.set_password(KEYRING_SERVICE, origin(url), key)
        elif keyring.get_password(KEYRING_SERVICE, origin(url)) is not None:
            keyring.delete_password(KEYRING_SERVICE, origin(url))
    except Exception as error:  # noqa: BLE001 - keyring backends raise their own types
        raise EngineError(f"the OS keyring cannot store the key ({error}); use {ENV_VARIABLE} instead") from None
