"""HTTP to one OpenAI-compatible server: JSON calls and SSE streams, every failure one clear line.

Built on httpx: certificates are verified, connect and read have timeouts and a whole request a
deadline (``Timeouts.total``: its socket is shut then), redirects are not followed (a redirect
would resend the document elsewhere). Answers are capped in size as they arrive on the wire:
``identity`` is asked for and a compressed answer is refused, never inflated. A request is sent
again only when the server closed the connection without one byte of an answer. A stream
can be cancelled from another thread: the cancel flag's callback shuts the socket down, which
ends a read blocked on a stalled server at once; the server sees the disconnect and stops.
Every request opens its own connection so that the socket to shut down is known from the moment
it is connected (httpx's trace hook), before any byte of the answer has arrived. The same hook
sees the address actually connected to (a name may resolve anywhere, and again on every
connection): nothing goes to an address of a kind the user has not allowed (``admits``), and the
API key never goes over plain http to an address that is not this machine's.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from sfumato.model.api import CancelFlag, EngineError
from sfumato.model.remote.addresses import LOOPBACK, WHERE, peer_kind
from sfumato.model.remote.sse import SseDecoder

MAX_RESPONSE_BYTES = 8 << 20  # a whole answer; a completion of 4096 tokens is far below this
MAX_ERROR_BYTES = 64 << 10  # what is read of an error page
DONE = object()  # yielded for the ``data: [DONE]`` event


@dataclass(frozen=True)
class Timeouts:
    connect: float = 10.0
    read: float = 120.0  # the longest silence between two bytes of an answer
    total: float = 600.0  # the longest a whole request may take, however its bytes trickle in


class Connection:
    """A base URL (``.../v1``), its API key and limits; one request at a time per stream.
    ``admits`` says whether an address of a kind (``addresses.LOOPBACK`` ...) may be sent to;
    None: any."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeouts: Timeouts = Timeouts(),
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        verify: bool | str = True,
        admits: Callable[[str], bool] | None = None,
    ):
        self.admits = admits
        self.base_url = base_url.rstrip("/")
        url = httpx.URL(self.base_url)
        self.host = url.host
        self.label = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
        self.encrypted = url.scheme == "https"
        self.max_response_bytes = max_response_bytes
        self.sends_key = bool(api_key or url.password)
        self._secrets = [secret for secret in (api_key, url.password) if secret]  # never in a message
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeouts.read, connect=timeouts.connect),
            verify=verify,
            headers={**headers, "Accept-Encoding": "identity"},
            follow_redirects=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self.read_timeout = timeouts.read
        self.connect_timeout = timeouts.connect
        self.total_timeout = timeouts.total

    def close(self) -> None:
        self._client.close()

    def scrub(self, message: str) -> str:
        """``message`` with the API key and the URL's password blanked out (a server may echo them)."""
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return message

    def url(self, path: str, at_root: bool = False) -> str:
        """``path`` under the ``/v1`` base, or under the server's root (vLLM's ``/tokenize``)."""
        base = self.base_url.rsplit("/v1", 1)[0] if at_root else self.base_url
        return f"{base}/{path.lstrip('/')}"

    # ---- plain JSON calls --------------------------------------------------------------------

    def get_json(self, path: str) -> object:
        return self._json("GET", self.url(path), None)

    def post_json(self, path: str, body: dict, at_root: bool = False) -> object:
        return self._json("POST", self.url(path, at_root), body)

    def _json(self, method: str, url: str, body: dict | None) -> object:
        for attempt in (1, 2):  # closed before one byte of the answer: asked once more
            sockets = _SocketHolder(self)
            try:
                with self._within_deadline(sockets), self._transport_errors(sockets), self._client.stream(
                    method, url, json=body, extensions={"trace": sockets.trace}
                ) as response:
                    self._check(response)
                    data = self._read(response, self.max_response_bytes)
                return self._decode_json(data, response)
            except _Dropped as dropped:
                if attempt == 2 or not dropped.before_answer:
                    raise EngineError(f"the connection to {self.label} broke before the answer was complete") from None

    @contextmanager
    def _within_deadline(self, sockets: _SocketHolder) -> Iterator[None]:
        """At ``total_timeout`` the request's socket is shut; whatever the read then does (fail, or
        end early) becomes one line."""
        timer = threading.Timer(self.total_timeout, sockets.expire)
        timer.daemon = True
        timer.start()
        late = EngineError(f"{self.label} took more than {self.total_timeout:g} s for one answer; gave up")
        try:
            yield
        except (EngineError, _Dropped):
            if sockets.expired:
                raise late from None
            raise
        finally:
            timer.cancel()
        if sockets.expired:
            raise late

    # ---- streams -----------------------------------------------------------------------------

    def stream(self, path: str, body: dict, cancel: CancelFlag | None = None) -> Iterator[object]:
        """POST ``body`` and yield each event's JSON (``DONE`` for ``[DONE]``) until the stream ends.

        A connection closed before the first byte of the answer is retried once, never one that
        had begun to answer; ``Cancelled`` when ``cancel`` is set, however the read was interrupted.
        """
        cancel = cancel or CancelFlag()
        for attempt in (1, 2):
            try:
                yield from self._stream_once(path, body, cancel)
                return
            except _Dropped as dropped:
                cancel.raise_if_set()
                if not dropped.before_answer or attempt == 2:
                    raise EngineError(f"the connection to {self.label} broke before the answer was complete") from None

    def _stream_once(self, path: str, body: dict, cancel: CancelFlag) -> Iterator[object]:
        sockets = _SocketHolder(self)
        cancel.on_set(sockets.shut_down)
        extensions = {"trace": sockets.trace}
        try:
            with self._within_deadline(sockets), self._transport_errors(sockets), self._client.stream(
                "POST", self.url(path), json=body, extensions=extensions
            ) as response:
                cancel.raise_if_set()
                self._check(response)
                kind = response.headers.get("content-type", "")
                if "text/event-stream" not in kind:  # a server that answers without streaming
                    yield self._decode_json(self._read(response, self.max_response_bytes), response)
                    return
                decoder, total = SseDecoder(), 0
                for chunk in self._chunks(response):
                    cancel.raise_if_set()
                    total += len(chunk)
                    if total > self.max_response_bytes:
                        raise EngineError(f"{self.label} sent more than {self.max_response_bytes >> 20} MiB; stopped reading")
                    for data in decoder.feed(chunk):
                        event = self._event(data)
                        yield event
                        if event is DONE:
                            return
                last = decoder.close()
                if last is not None:
                    yield self._event(last)
        except EngineError:
            cancel.raise_if_set()  # a read broken by the cancel's shutdown is a cancel, not a failure
            raise
        cancel.raise_if_set()

    def _event(self, data: str) -> object:
        if data.strip() == "[DONE]":
            return DONE
        try:
            event = json.loads(data)
        except (ValueError, RecursionError) as error:
            raise EngineError(f"{self.label} sent a malformed stream (an event {_unreadable(error)}: {clip_line(self.scrub(data), 60)!r})") from None
        if not isinstance(event, dict):
            raise EngineError(f"{self.label} sent a malformed stream (an event that is not a JSON object)")
        if "error" in event and "choices" not in event:
            raise EngineError(f"{self.label} failed while answering: {_error_detail(event, self.scrub)}")
        return event

    # ---- answers and errors ------------------------------------------------------------------

    def _chunks(self, response: httpx.Response) -> Iterator[bytes]:
        """The answer's bytes as they came over the wire; a compressed answer is refused (inflating
        it could take gigabytes: 3.5 KB of doubly gzipped zeros did)."""
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise EngineError(f"{self.label} compressed its answer ({clip_line(encoding, 40)}) although asked not to; it was not read")
        yield from response.iter_raw()

    def _read(self, response: httpx.Response, limit: int) -> bytes:
        data = bytearray()
        for chunk in self._chunks(response):
            data += chunk
            if len(data) > limit:
                raise EngineError(f"{self.label} sent more than {limit >> 20} MiB; stopped reading")
        return bytes(data)

    def _decode_json(self, data: bytes, response: httpx.Response) -> object:
        if _looks_like_html(data, response):
            raise EngineError(f"{self.label} answered with an HTML page, not the OpenAI API (the URL should end in /v1)")
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as error:  # not JSON, not UTF-8, a huge number, deep nesting
            said = clip_line(self.scrub(data.decode("utf-8", "replace")), 60)
            raise EngineError(f"{self.label} answered with something {_unreadable(error)}: {said!r}") from None

    def _check(self, response: httpx.Response) -> None:
        if response.status_code < 300:
            return
        data = self._read_quietly(response)
        message = describe_status(self.label, response.status_code, response.headers, data, response, self.scrub)
        raise HttpStatusError(message, response.status_code, _error_detail(_json_or_text(data), self.scrub))

    def _read_quietly(self, response: httpx.Response) -> bytes:
        data = bytearray()
        try:
            for chunk in self._chunks(response):
                data += chunk
                if len(data) > MAX_ERROR_BYTES:
                    break
        except (httpx.HTTPError, EngineError):
            pass
        return bytes(data[:MAX_ERROR_BYTES])

    def _transport_errors(self, sockets: _SocketHolder):
        return _TransportErrors(self, sockets)


class HttpStatusError(EngineError):
    """An HTTP error answer; ``status`` and ``detail`` let callers recognise what was refused."""

    def __init__(self, message: str, status: int, detail: str):
        super().__init__(message)
        self.status = status
        self.detail = detail


class _Dropped(Exception):
    """The connection closed or broke under a request; ``before_answer`` when not one byte of an
    answer had arrived (counted on the socket), so asking again cannot send the document to a
    server that had begun to answer it."""

    def __init__(self, before_answer: bool):
        super().__init__("the connection broke")
        self.before_answer = before_answer


class _TransportErrors:
    """Turn httpx's transport exceptions into one line that names the server and the cause."""

    def __init__(self, connection: Connection, sockets: _SocketHolder):
        self.connection = connection
        self.sockets = sockets

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if error is None or not isinstance(error, httpx.HTTPError):
            return False
        if isinstance(error, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            raise _Dropped(not self.sockets.answered) from None
        raise EngineError(self.connection.scrub(describe_transport_error(self.connection, error))) from None


class _SocketHolder:
    """Remembers the request's socket (httpx trace hook) so another thread can shut it down, and
    refuses to send the API key unencrypted once the socket is connected to another machine."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._shut = False
        self.expired = False  # shut by the request's deadline
        self.answered = False  # a byte of the answer has arrived

    def trace(self, name: str, info: dict) -> None:
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if name == "connection.connect_tcp.complete" and sock is not None:
                self._check_peer(stream, sock.getpeername()[0])
            if stream is not None:
                self._count_reads(stream)
            with self._lock:
                self._socket = sock
                shut = self._shut
            if shut:
                self.shut_down()

    def _count_reads(self, stream) -> None:
        """Note the first byte read from ``stream`` (httpcore's network stream, TCP or TLS)."""
        read = stream.read

        def counted(*args, **kwargs) -> bytes:
            data = read(*args, **kwargs)
            self.answered = self.answered or bool(data)
            return data

        stream.read = counted

    def _check_peer(self, stream, address: str) -> None:
        """Refuse, before a byte of the request is written, an address the user has not allowed,
        and plain http with the API key to another machine."""
        connection, kind = self.connection, peer_kind(address)
        if connection.admits is not None and not connection.admits(kind):
            stream.close()
            raise EngineError(
                f"{connection.label} is at {address} now, {WHERE[kind]}, where you have not allowed text to go; "
                "nothing was sent"
            )
        if connection.sends_key and not connection.encrypted and kind != LOOPBACK:
            stream.close()
            raise EngineError(
                f"the API key is never sent over plain http to {connection.label} ({address} is not this machine): "
                "use https://, or remove the key (Settings > Server, SFUMATO_API_KEY)"
            )

    def expire(self) -> None:
        self.expired = True
        self.shut_down()

    def shut_down(self) -> None:
        with self._lock:
            self._shut = True
            sock = self._socket
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed


def describe_transport_error(connection: Connection, error: httpx.HTTPError) -> str:
    label, text = connection.label, connection.scrub(str(error))  # scrubbed before any clip
    cause = repr(error.__context__ or error.__cause__ or "")
    both = f"{text} {cause}"
    if isinstance(error, httpx.ConnectTimeout):
        return f"{label} did not accept a connection within {connection.connect_timeout:g} s"
    if isinstance(error, httpx.ReadTimeout):
        return f"{label} sent nothing for {connection.read_timeout:g} s; gave up waiting"
    if isinstance(error, httpx.TimeoutException):
        return f"{label} timed out ({clip_line(text, 80)})"
    if "CERTIFICATE_VERIFY_FAILED" in both or "certificate verify failed" in both:
        return f"the TLS certificate of {label} could not be verified ({clip_line(_after(text, ']'), 80)}); refusing to send the document"
    if "SSL" in both or "TLS" in both:
        return f"TLS with {label} failed ({clip_line(text, 80)})"
    if "Name or service not known" in both or "nodename nor servname" in both or "getaddrinfo" in both or "Errno -2" in both or "Errno -3" in both:
        return f"cannot find the server {connection.host} (the name does not resolve)"
    if "Connection refused" in both or "Errno 111" in both:
        return f"cannot connect to {label}: connection refused (is the server running?)"
    if isinstance(error, httpx.UnsupportedProtocol):
        return f"{label}: the URL must start with http:// or https://"
    if isinstance(error, httpx.LocalProtocolError):  # its text quotes the header value: never shown
        return f"cannot send a request to {label}: a header value is not valid (the API key?)"
    return f"cannot talk to {label} ({clip_line(text, 80) or type(error).__name__})"


def describe_status(label: str, status: int, headers, data: bytes, response=None, scrub: Callable[[str], str] = str) -> str:
    """One line for an HTTP error answer; names the setting to fix where there is one. ``scrub``
    blanks secrets in the server's words before they are clipped (a clipped key is not found)."""
    if response is not None and _looks_like_html(data, response) and status not in (401, 403, 429):
        detail = "an HTML page"
    else:
        detail = _error_detail(_json_or_text(data), scrub)
    said = f": {detail}" if detail else ""
    if status in (401, 403):
        return f"{label} refused the API key (HTTP {status}{said}); set it in Settings > Server or SFUMATO_API_KEY"
    if status == 404 and "model" in detail.lower():
        return f"{label} has no such model (HTTP 404{said}); pick one it serves (--remote-model, Settings > Server)"
    if status == 404:
        return f"{label} has no OpenAI API at that address (HTTP 404); the URL should end in /v1"
    if status == 429:
        wait = (headers.get("retry-after") or "").strip()
        later = f"try again in {wait} s" if wait.isdigit() else "try again later"
        return f"{label} is busy (HTTP 429): {later}"
    if status >= 500:
        return f"{label} failed (HTTP {status}{said})"
    return f"{label} rejected the request (HTTP {status}{said})"


def _json_or_text(data: bytes) -> object:
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _unreadable(error: Exception) -> str:
    """Why JSON could not be read, in words (never Python's own exception text)."""
    if isinstance(error, RecursionError):
        return "nested too deep to read as JSON"
    if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
        return "that is not JSON"
    return "with a number too large to read as JSON"


def _error_detail(answer: object, scrub: Callable[[str], str] = str) -> str:
    """The message of OpenAI-style (``{"error": {"message"}}``), FastAPI (``detail``) or plain errors,
    ``scrub``bed, then clipped."""
    if isinstance(answer, dict):
        for key in ("error", "detail", "message"):
            if key in answer:
                return _error_detail(answer[key], scrub)
        return ""
    if isinstance(answer, list) and answer:
        return _error_detail(answer[0], scrub)
    return clip_line(scrub(str(answer)), 160)


def _looks_like_html(data: bytes, response: httpx.Response) -> bool:
    kind = response.headers.get("content-type", "")
    return "html" in kind or data.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))


def clip_line(text: str, limit: int) -> str:
    """``text`` as one line (runs of whitespace, line breaks among them, one space) of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _after(text: str, mark: str) -> str:
    return text.rsplit(mark, 1)[-1].strip() or text
