"""The engine API: one request in, a stream of drafts out.

Everything outside ``model/`` (the editor, the CLI, the benchmarks) talks to the engine only
through these types and the ``Backend`` protocol. Nothing here imports torch, so the editor can
import it while the window is still coming up. What the editor must know about a backend is said
here, never by its class: ``ModelInfo.served`` (and a served backend's connection),
``Draft.confident``, and ``SERVER_URL`` for the specs no text may go to before the user's consent.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sfumato.model.untrusted_text import clean_model_text, without_lone_surrogates

# A model spec that names a server (``http(s)://host[:port][/path]/v1``): the model runs there, and
# nothing, not even model discovery, goes to it before the user allows that server.
SERVER_URL = re.compile(r"^https?://[^\s/?#]+(/[^\s?#]*)?/v1/?$")


CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_FILE_NAME = 255  # characters: a file system's longest name (a request's header never outgrows it)


def one_line_name(name: str) -> str:
    """A file name as one line a model may read: a control (a line break is allowed in a name on
    Linux) as a space, a lone surrogate replaced; a longer name than any file has is refused."""
    if len(name) > MAX_FILE_NAME:
        raise ValueError(f"file_name must be at most {MAX_FILE_NAME} characters")
    return CONTROL.sub(" ", without_lone_surrogates(name))


class EngineError(RuntimeError):
    """A failure the user should read: a bad model folder, an impossible request."""


def failure_line(error: BaseException) -> str:
    """``error`` in one line for a user: its first line, or for a missing package, which one and
    the command that installs it."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return f"the {error.name} package is missing; pip install {error.name}"
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


class Cancelled(Exception):
    """Raised inside a backend when the request's cancel flag was set between passes."""


@dataclass(frozen=True)
class InfillRequest:
    """What to write between ``prefix`` and ``suffix``.

    ``init_text`` + ``strength`` make it a rewrite: the canvas starts from ``init_text`` and only
    a ``strength`` fraction of its tokens is renoised (0 keeps the text, 1 is a fresh infill).
    ``instruction`` is used by instruction-tuned checkpoints only. ``steps`` and ``seed`` of None
    take the model's defaults; ``n_alternatives`` candidates are decoded as one batch.
    ``sampler_bound`` trades quality for speed: the entropy a pass may accept (None: the model's
    default; a tiny value accepts one token per pass, the sequential baseline).
    ``context`` holds snippets of other open files and the folder, nearest first; backends put
    what fits their prompt budget before the document.
    ``one_line`` asks for the rest of the cursor's line only: the text ends at its first newline.
    ``first_alternative`` numbers the candidates from there: Try Again asks for the ones not shown
    yet, so a backend whose first candidate is deterministic (the embedded engine's) shows new text.
    ``must_write``: the text may not be empty (a template's gap, where the user asked for text).
    ``file_name``: the document's file name, no folder ("" when untitled): the embedded engine
    heads the prefix with it, as it heads a snippet, where the text alone may not tell its language.
    """

    prefix: str = ""
    suffix: str = ""
    max_new_tokens: int = 64
    init_text: str | None = None
    strength: float = 1.0
    instruction: str | None = None
    steps: int | None = None
    seed: int | None = None
    n_alternatives: int = 1
    sampler_bound: float | None = None
    context: tuple[str, ...] = ()
    one_line: bool = False
    first_alternative: int = 0
    must_write: bool = False
    file_name: str = ""

    def __post_init__(self) -> None:
        if self.first_alternative < 0:
            raise ValueError("first_alternative must not be negative")
        if self.sampler_bound is not None and self.sampler_bound <= 0:
            raise ValueError("sampler_bound must be positive")
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be at least 1")
        if not 0.0 <= self.strength <= 1.0:
            raise ValueError("strength must be between 0 and 1")
        if self.n_alternatives < 1:
            raise ValueError("n_alternatives must be at least 1")
        if self.steps is not None and self.steps < 1:
            raise ValueError("steps must be at least 1")
        for name in ("prefix", "suffix", "init_text", "instruction"):  # what a model reads is text it can encode
            if (value := getattr(self, name)) is not None:
                object.__setattr__(self, name, without_lone_surrogates(value))
        object.__setattr__(self, "context", tuple(map(without_lone_surrogates, self.context)))
        object.__setattr__(self, "file_name", one_line_name(self.file_name))

    @property
    def is_rewrite(self) -> bool:
        return self.init_text is not None


@dataclass(frozen=True)
class TemplateRequest:
    """Fill every gap of a template jointly: ``segments`` is the text around the gaps.

    Gap i lies between ``segments[i]`` and ``segments[i + 1]``; ``max_new_tokens[i]`` caps it
    (from a ``[MASK:n]`` hint or a default). Backends yield one draft per gap, in order.
    ``first_alternative`` and ``file_name`` as for an ``InfillRequest``: Try Again's fill is the next one.
    """

    segments: tuple[str, ...]
    max_new_tokens: tuple[int, ...]
    steps: int | None = None
    seed: int | None = None
    first_alternative: int = 0
    file_name: str = ""

    def __post_init__(self) -> None:
        if self.first_alternative < 0:
            raise ValueError("first_alternative must not be negative")
        if len(self.segments) != len(self.max_new_tokens) + 1:
            raise ValueError("a template with n gaps has n + 1 segments")
        if any(n < 1 for n in self.max_new_tokens):
            raise ValueError("every gap needs max_new_tokens of at least 1")
        object.__setattr__(self, "segments", tuple(map(without_lone_surrogates, self.segments)))
        object.__setattr__(self, "file_name", one_line_name(self.file_name))


@dataclass(frozen=True)
class TokenState:
    """One canvas position as the editor draws it."""

    text: str
    confidence: float  # probability of the shown token under the model, 0..1
    accepted: bool  # the sampler has settled this position


@dataclass(frozen=True)
class Candidate:
    """One alternative's text in a draft, written by the model; ``tokens`` spell exactly ``text``.
    The text is cleaned on the way in (``sfumato.model.untrusted_text``): no control, NUL or lone
    surrogate, whatever the backend."""

    text: str
    tokens: tuple[TokenState, ...]

    def __post_init__(self) -> None:
        cleaned = clean_model_text(self.text)
        if cleaned is not self.text:  # rare: the tokens are cleaned the same way, so they still spell it
            object.__setattr__(self, "text", cleaned)
            tokens = tuple(TokenState(clean_model_text(t.text), t.confidence, t.accepted) for t in self.tokens)
            object.__setattr__(self, "tokens", tokens)

    @property
    def mean_probability(self) -> float:
        """How sure the model is of this text: its settled tokens' mean probability (0 without any)."""
        settled = [token.confidence for token in self.tokens if token.accepted]
        return sum(settled) / len(settled) if settled else 0.0


@dataclass(frozen=True)
class Draft:
    """The state after one denoising pass.

    ``batch_passes`` counts the passes the whole batch has run so far (the progress the editor
    shows; every request of a batch has the same); ``forward_passes`` counts those this request's
    own rows needed: the batch's passes after they stopped do not count, so it is the denominator
    of ``tokens_per_pass``. ``final`` marks the last draft, whose candidates are the results.
    Alternative 0 is ``text`` / ``tokens``. ``confident`` is False on a final draft the engine
    does not trust (the embedded one: its tokens' mean probability is under a bar); the editor
    shows it all the same, marked "Low confidence: check it".
    """

    batch_passes: int
    candidates: tuple[Candidate, ...]
    final: bool = False
    forward_passes: int = 0
    generated_tokens: int = 0
    confident: bool = True

    @property
    def text(self) -> str:
        return self.candidates[0].text

    @property
    def tokens(self) -> tuple[TokenState, ...]:
        return self.candidates[0].tokens

    @property
    def tokens_per_pass(self) -> float:
        return self.generated_tokens / self.forward_passes if self.forward_passes else 0.0


@dataclass
class CancelFlag:
    """Set from any thread; the backend checks it between passes."""

    _event: threading.Event = field(default_factory=threading.Event)
    _callbacks: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def set(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback) -> None:
        """Call ``callback`` (on the setting thread) when the flag is set; at once if it already is.

        Lets a backend blocked in I/O (a network read) be woken from another thread.
        """
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def is_set(self) -> bool:
        return self._event.is_set()

    def raise_if_set(self) -> None:
        if self._event.is_set():
            raise Cancelled()


@dataclass(frozen=True)
class ModelInfo:
    """What the editor shows of a loaded model, and what it must know of it. A ``served`` model's
    backend also tells its connection, read on the worker thread after loading and after every
    job: ``round_trip`` (the last request's ``seconds``, ``tokens_per_second`` and
    ``tokens_exact``, or None), ``encrypted``, and ``streams_drafts`` (False: the server sends
    finished text only, no intermediate drafts)."""

    name: str
    backend: str  # "lm-denoiser" (the embedded one), "diffusion-gemma", "masked-diffusion" or "remote"; for display
    device: str
    parameters: int
    instruction_tuned: bool
    license: str = "unknown"
    precision: str = ""  # "bfloat16", or "int8 (float32)": quantized weights (compute dtype); "": not known here
    memory_bytes: int = 0  # what the loaded weights hold, quantized tensors included; 0: not known here
    served: bool = False  # the model runs on a server (``device`` names it): the editor waits for it


class Backend(Protocol):
    """A loaded model that turns requests into drafts. Not thread-safe: one worker owns it.

    Optional method, looked up with ``getattr``: ``warm(request, cancel)`` reads a request's
    prompt ahead of time.
    """

    info: ModelInfo

    def stream(
        self, requests: Sequence[InfillRequest], cancel: CancelFlag | None = None
    ) -> Iterator[tuple[Draft, ...]]:
        """Denoise ``requests`` together; yield one draft per request after every pass.

        The last tuple has ``final=True`` on every draft. Raises ``Cancelled`` when ``cancel``
        is set, between passes, leaving no state behind.
        """
        ...

    def stream_template(
        self, template: TemplateRequest, cancel: CancelFlag | None = None
    ) -> Iterator[tuple[Draft, ...]]:
        """Fill all gaps of ``template``; yield one draft per gap after every pass."""
        ...
