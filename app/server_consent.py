"""Asking before a document's text first goes to a server: once per server, remembered.

Loopback servers need no question. Any other server is asked about once (its origin is kept in
``Settings.servers_allowed``); plain http to a public address is asked about once more
(``Settings.plain_http_allowed``). Questions are asked on the UI thread, before a request is
submitted; a "no" means the request is not sent at all. Until a server is ``settled`` (no question
left to ask), nothing goes to it, not even model discovery: the editor connects once it is. Telling where a server given by a host
name is takes a DNS lookup, which may hang: ``locate`` does it on the event loop's thread pool first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sfumato.app.settings import Settings
from sfumato.model.remote.addresses import LOOPBACK, PRIVATE, PUBLIC, address_kind, is_encrypted, literal_kind, within
from sfumato.model.remote.credentials import origin

Ask = Callable[[str, str], bool]  # (title, question) -> yes


class ServerConsent:
    def __init__(
        self, settings: Settings, ask: Ask, remembered: Callable[[], None] = lambda: None,
        kind_of: Callable[[str], str] = address_kind,
    ):
        self.settings = settings
        self.ask = ask
        self.remembered = remembered  # called when an answer was added to the settings (to save them)
        self.kind_of = kind_of  # resolves the host (it may wait on DNS): once per server, by ``locate``
        self._kinds: dict[str, str] = {}

    def located(self, url: str) -> bool:
        """Where ``url``'s server is, is known without a lookup (an address, or located before)."""
        return origin(url) in self._kinds or literal_kind(url) is not None

    def settled(self, url: str) -> bool:
        """Text may go to ``url`` with no question asked (loopback, or every question answered),
        as far as is known without a lookup."""
        server = origin(url)
        kind = self._kinds.get(server) or literal_kind(url)
        if kind == LOOPBACK:
            return True
        return server in self.settings.servers_allowed and (
            is_encrypted(url) or kind == PRIVATE or server in self.settings.plain_http_allowed
        )

    async def locate(self, url: str, loop: asyncio.AbstractEventLoop) -> None:
        """Learn where ``url``'s server is, its name resolved on ``loop``'s thread pool, so that a
        slow or dead DNS never holds the UI thread."""
        if not self.located(url):
            self._kinds[origin(url)] = await loop.run_in_executor(None, self.kind_of, url)

    def farthest(self, url: str) -> str:
        """The farthest kind of address the user's answers let text go to at ``url``."""
        server = origin(url)
        if server not in self.settings.servers_allowed:
            return LOOPBACK
        if is_encrypted(url) or server in self.settings.plain_http_allowed:
            return PUBLIC
        return PRIVATE

    def admits(self, url: str) -> Callable[[str], bool]:
        """For ``url``'s connection (``RemoteOptions.admits``, called on the worker thread): whether
        the address it reached, of a kind, is within the user's answers now; one that is not is
        remembered as where the server is, so the next request asks about it."""
        server = origin(url)

        def check(kind: str) -> bool:
            if within(kind, self.farthest(url)):
                return True
            self._kinds[server] = kind
            return False

        return check

    def allows(self, url: str) -> bool:
        """True when text may go to ``url`` now (asking first where the user has not answered).
        ``locate`` the server first: a name not located yet is resolved here, on this thread."""
        server = origin(url)
        kind = self._kinds.get(server) or literal_kind(url) or self._kinds.setdefault(server, self.kind_of(url))
        if kind == LOOPBACK:
            return True
        if server not in self.settings.servers_allowed:
            question = (
                "The text around the region (and the selection, and a few snippets of the project's other files) "
                f"will be sent to {server}, "
                f"a server on {'the internet' if kind == PUBLIC else 'your network'}. Send it, now and from now on?"
            )
            if not self.ask("Send text to a server?", question):
                return False
            self.settings.servers_allowed.append(server)
            self.remembered()
        if kind == PUBLIC and not is_encrypted(url) and server not in self.settings.plain_http_allowed:
            question = (
                f"{server} is on the internet and the connection is not encrypted (http, not https): "
                "anyone on the way can read the text. Send it anyway, now and from now on?"
            )
            if not self.ask("Unencrypted connection", question):
                return False
            self.settings.plain_http_allowed.append(server)
            self.remembered()
        return True
