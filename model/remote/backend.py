"""The remote backend: requests go to a server over HTTP, streamed chunks come back as drafts.

Two kinds of stream, both honest about what the model did:

* canvas chunks (vLLM, SGLang, ``transformers serve``): each chunk adds text the server has
  finished (vLLM sends one per canvas); the draft's text accumulates and every piece is settled;
* draft streams (``"diffusing": true``, Inception's Mercury): each chunk is the whole current
  draft and replaces the previous one; pieces that changed are drawn as still denoising.

A draft is made per received chunk, never invented between chunks; ``batch_passes`` and
``forward_passes`` are 0 (unknown), because servers do not report their passes. Requests of a batch, and a
request's alternatives, are sent one after the other. A stream must end properly (a
``finish_reason`` or ``[DONE]``); a cut, oversized or over-long answer is an ``EngineError`` and
nothing of it is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from sfumato.model.api import Candidate, CancelFlag, Draft, EngineError, InfillRequest, ModelInfo, TemplateRequest
from sfumato.model.gap_fill import fill_gaps_separately
from sfumato.model.region_prompt import SERVER_PROMPT_TOKENS
from sfumato.model.remote.connection import DONE, MAX_RESPONSE_BYTES, Connection, HttpStatusError, Timeouts, clip_line
from sfumato.model.remote.credentials import api_key_for, clean_api_key
from sfumato.model.remote.pieces import SettledText, draft_candidate, settled_candidate, split_pieces
from sfumato.model.remote.prompts import diffusion_extras, request_body
from sfumato.model.remote.server import ServerProfile, discover, seed_canvas
from sfumato.model.untrusted_text import terminal_safe

EMPTY = Candidate("", ())
MAX_CHARS_PER_TOKEN = 16  # an answer longer than this many characters a token asked for is refused
BARE_FAILURES = ("", "internal server error")  # a 5xx that gives no reason: perhaps chat itself (no template)
SHOWN_NAME_CHARS = 80  # of a served model's id, where the window and the commands show it


@dataclass(frozen=True)
class RemoteOptions:
    model: str | None = None  # None: the first model the server lists
    api_key: str | None = None  # None: SFUMATO_API_KEY or the OS keyring
    context_tokens: int = SERVER_PROMPT_TOKENS  # longer documents lose the prefix's start
    canvas_length: int = 256  # the served DiffusionGemma's canvas (vLLM seeds exactly this many ids)
    timeouts: Timeouts = field(default_factory=Timeouts)
    max_response_bytes: int = MAX_RESPONSE_BYTES
    draft_stream: bool | None = None  # None: only for servers known to stream drafts
    verify: bool | str = True  # TLS verification, or a CA bundle file
    admits: Callable[[str], bool] | None = None  # the address kinds the user allowed (Connection); None: any


@dataclass(frozen=True)
class RoundTrip:
    """The last request's timing, for the status bar and the bench."""

    first_chunk_seconds: float | None  # request sent -> first text received
    seconds: float  # request sent -> stream closed
    tokens: int
    tokens_exact: bool  # counted by the server (usage), else pieces of text

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def connect(url: str, options: RemoteOptions = RemoteOptions()) -> RemoteBackend:
    """Open ``url`` (``http(s)://host:port/v1``), learn its model and abilities; EngineError if unreachable."""
    api_key = clean_api_key(options.api_key) or api_key_for(url)
    connection = Connection(url, api_key, options.timeouts, options.max_response_bytes, options.verify, options.admits)
    try:
        profile = discover(connection, options.model, options.draft_stream)
    except BaseException:
        connection.close()
        raise
    return RemoteBackend(connection, profile, options)


class RemoteBackend:
    def __init__(self, connection: Connection, profile: ServerProfile, options: RemoteOptions):
        self.connection = connection
        self.profile = profile
        self.options = options
        self.info = ModelInfo(
            name=clip_line(terminal_safe(connection.scrub(profile.model)), SHOWN_NAME_CHARS),  # the server's words, shown
            backend="remote",
            device=connection.label,
            parameters=0,  # unknown: the server does not say
            instruction_tuned=profile.chat and profile.fim is None,
            served=True,
        )
        self.round_trip: RoundTrip | None = None

    @property
    def encrypted(self) -> bool:
        return self.connection.encrypted

    @property
    def streams_drafts(self) -> bool:
        return self.profile.draft_stream

    def close(self) -> None:
        self.connection.close()

    # ---- Backend protocol ----------------------------------------------------------------------

    def stream(self, requests: Sequence[InfillRequest], cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        cancel = cancel or CancelFlag()
        slots = [[EMPTY] * request.n_alternatives for request in requests]
        tokens = [0] * len(requests)

        def drafts(final: bool) -> tuple[Draft, ...]:
            return tuple(
                Draft(0, tuple(slots[i]), final=final, forward_passes=0, generated_tokens=tokens[i])
                for i in range(len(requests))
            )

        for index, request in enumerate(requests):
            for alternative in range(request.n_alternatives):
                cancel.raise_if_set()
                for candidate, count in self._run(request, cancel):
                    slots[index][alternative] = candidate
                    tokens[index] = count
                    yield drafts(False)
                slots[index][alternative] = settled_candidate(slots[index][alternative].text)
                tokens[index] = self.round_trip.tokens  # the server's count, when it gave one
        yield drafts(True)

    def stream_template(self, template: TemplateRequest, cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        return fill_gaps_separately(self, template, cancel)

    # ---- one request -------------------------------------------------------------------------

    def _run(self, request: InfillRequest, cancel: CancelFlag) -> Iterator[tuple[Candidate, int]]:
        """Stream one request; falls back (once each) when the server refuses extras, chat or
        draft streams. A chat refusal is kept only when the completions after it are answered;
        when they fail too, both of the server's messages are shown."""
        chat_refusal: HttpStatusError | None = None
        while True:
            path, body = request_body(self.profile, request, self.options.context_tokens)
            if self.profile.extras:
                seeded = None
                if request.is_rewrite:
                    seeded = seed_canvas(self.connection, self.profile.model, request.init_text, self.options.canvas_length)
                canvas, selection_tokens = seeded or (None, 0)
                extras = diffusion_extras(request, canvas, selection_tokens)
                if extras:
                    body["vllm_xargs"] = extras
            try:
                yield from self._receive(path, body, cancel)
                return
            except HttpStatusError as error:  # raised before any chunk: safe to ask again without
                if self._fall_back(error, body):
                    chat_refusal = chat_refusal or (error if "messages" in body and not self.profile.chat else None)
                    continue
                if chat_refusal is None:
                    raise
                self.profile.chat = True  # not known to be chat's fault: the next request tries it again
                said = f": {error.detail}" if error.detail else ""
                raise EngineError(f"{chat_refusal}; /v1/completions failed too (HTTP {error.status}{said})") from None

    def _fall_back(self, error: HttpStatusError, body: dict) -> bool:
        detail = error.detail.lower()
        refused = error.status in (400, 422)
        if "vllm_xargs" in body and refused:
            self.profile.extras = False
        elif "diffusing" in body and refused and "diffusing" in detail:
            self.profile.draft_stream = False
        elif "messages" in body and (
            (error.status in (404, 405) and "model" not in detail)
            or "chat template" in detail or "chat_template" in detail
            or (error.status >= 500 and detail in BARE_FAILURES)  # ``transformers serve`` of a base model
        ):
            self.profile.chat = False
        else:
            return False
        return True

    def _receive(self, path: str, body: dict, cancel: CancelFlag) -> Iterator[tuple[Candidate, int]]:
        began = time.perf_counter()
        first: float | None = None
        limit = body["max_tokens"]
        replaces = bool(body.get("diffusing"))
        received, text, finished, counted = SettledText(), "", False, None
        for event in self.connection.stream(path, body, cancel):
            if event is DONE:
                finished = True
                break
            counted = _usage_tokens(event, counted)
            piece, done = self._choice(event)
            finished = finished or done
            if counted is not None and counted > limit:
                raise EngineError(f"{self.connection.label} sent {counted} tokens, more than the {limit} asked for; nothing was kept")
            if not piece:
                continue
            first = first if first is not None else time.perf_counter() - began
            if len((piece if replaces else text + piece)) > MAX_CHARS_PER_TOKEN * limit + 256:
                raise EngineError(f"{self.connection.label} sent far more text than the {limit} tokens asked for; nothing was kept")
            if replaces:
                candidate, text = draft_candidate(piece, text), piece
                pieces = len(candidate.tokens)
            else:
                candidate, text = received.add(piece), text + piece
                pieces = received.pieces
            if pieces > 2 * limit + 16:
                raise EngineError(f"{self.connection.label} sent far more text than the {limit} tokens asked for; nothing was kept")
            yield candidate, counted if counted is not None else pieces
        if not finished:
            raise EngineError(f"{self.connection.label} ended the stream before the answer was complete; nothing was kept")
        tokens = counted if counted is not None else len(split_pieces(text))
        self.round_trip = RoundTrip(first, time.perf_counter() - began, tokens, counted is not None)

    def _choice(self, event: dict) -> tuple[str, bool]:
        """(text of the first choice, whether it finished) of one chunk."""
        choices = event.get("choices")
        if choices is None or choices == []:
            return "", False  # a usage-only chunk
        if not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise EngineError(f"{self.connection.label} sent a malformed stream (a chunk without choices)")
        choice = choices[0]
        if "delta" in choice or "message" in choice:  # a stream's chunk, or a whole answer (no streaming)
            message = choice.get("delta", choice.get("message"))
            piece = message.get("content") if isinstance(message, dict) else None
        else:
            piece = choice.get("text")
        if piece is not None and not isinstance(piece, str):
            raise EngineError(f"{self.connection.label} sent a malformed stream (text that is not a string)")
        return piece or "", bool(choice.get("finish_reason"))


def _usage_tokens(event: dict, known: int | None) -> int | None:
    """The server's count of completion tokens; a count that is not a whole number of at least 0
    is no count (the pieces of text are counted instead)."""
    usage = event.get("usage")
    count = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    return known
