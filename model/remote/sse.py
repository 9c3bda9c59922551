"""Server-Sent Events: cut a byte stream into the ``data`` payloads of its events.

Per the WHATWG rules an event is a run of lines ended by a blank line; ``data:`` lines are
joined with newlines, comment lines (``:``) and other fields (``event:``, ``id:``) are skipped,
and CR, LF and CRLF all end a line. The decoder is fed whatever chunks the socket gives, so an
event may arrive split anywhere, even inside a UTF-8 character.
"""

from __future__ import annotations

import re

from sfumato.model.api import EngineError

LINE_END = re.compile(rb"\r\n|\r|\n")


class SseDecoder:
    """Feed bytes, get complete events' data; refuses an event larger than ``max_event_bytes``.
    Linear in what it is fed: the buffer only grows at its end, and each byte is scanned once."""

    def __init__(self, max_event_bytes: int = 1 << 20):
        self.max_event_bytes = max_event_bytes
        self._buffer = bytearray()
        self._scanned = 0  # the buffer's bytes before this hold no line end
        self._data: list[bytes] = []
        self._event_bytes = 0

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        events: list[str] = []
        start = 0
        while True:
            match = LINE_END.search(self._buffer, max(start, self._scanned))
            # A lone CR at the end may be the first half of a CRLF: wait for the next byte.
            if match is None or (match.group() == b"\r" and match.end() == len(self._buffer)):
                break
            event = self._line(bytes(self._buffer[start : match.start()]))
            start = match.end()
            if event is not None:
                events.append(event)
        del self._buffer[:start]
        self._scanned = max(0, len(self._buffer) - 1)  # a trailing CR is looked at again
        if len(self._buffer) + self._event_bytes > self.max_event_bytes:
            raise EngineError(f"the server sent an event larger than {self.max_event_bytes // 1024} KiB")
        return events

    def close(self) -> str | None:
        """The last event when the stream ended without its blank line (servers do that)."""
        if self._buffer:
            self._line(bytes(self._buffer))
            self._buffer, self._scanned = bytearray(), 0
        return self._line(b"")

    def _line(self, line: bytes) -> str | None:
        if not line:
            if not self._data:
                return None
            data, self._data, self._event_bytes = b"\n".join(self._data), [], 0
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                raise EngineError("the server sent an event that is not UTF-8 text") from None
        if line.startswith(b":"):
            return None
        field, _, value = line.partition(b":")
        if field == b"data":
            value = value[1:] if value.startswith(b" ") else value
            self._data.append(value)
            self._event_bytes += len(value) + 1
            if self._event_bytes > self.max_event_bytes:
                raise EngineError(f"the server sent an event larger than {self.max_event_bytes // 1024} KiB")
        return None
