"""What one server is and accepts, learned once when it is connected.

* the model: the one the user names, else the first of ``GET /v1/models``;
* FIM tokens: asked through ``POST /tokenize`` (vLLM's, at the server root) for the markers of
  the common FIM families; a marker that is one token means the served tokenizer has FIM tokens.
  Servers without ``/tokenize`` (``transformers serve``, hosted APIs) get chat prompts;
* diffusion extras (``vllm_xargs``): only for vLLM (``owned_by: vllm`` in the model list), and
  dropped for good the first time the server rejects them; a rewrite's seed canvas is built from
  the served tokenizer's ids (``/tokenize``) of the selection, ``<eos>`` and ``<pad>`` (Gemma's);
* chat: dropped for good when the server has no chat template (it says so, or answers chat with a
  bare 5xx that completions then answer: ``transformers serve`` of a base model); then FIM or
  prefix-only completions;
* draft streams (``"diffusing": true``): Inception's Mercury API, or when the user says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from sfumato.model.api import EngineError
from sfumato.model.remote.connection import Connection, clip_line

# (prefix, suffix, middle) markers, prefix-suffix-middle order; the first that is one token wins
FIM_FAMILIES = (
    ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),  # StarCoder, Sfumato's own models
    ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),  # Qwen2.5-Coder
    ("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"),  # DeepSeek-Coder
)
DRAFT_STREAM_HOSTS = ("inceptionlabs.ai",)


@dataclass
class ServerProfile:
    model: str
    owned_by: str = ""
    fim: tuple[str, str, str] | None = None
    chat: bool = True
    extras: bool = False
    draft_stream: bool = False


def discover(connection: Connection, model: str | None = None, draft_stream: bool | None = None) -> ServerProfile:
    """Ask the server for its models (and FIM tokens); EngineError when it serves none or not ``model``."""
    answer = connection.get_json("models")
    entries = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(entries, list):
        raise EngineError(f"{connection.label}: /v1/models did not answer an OpenAI model list")
    served = [entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str)]
    if model is None:
        if not served:
            raise EngineError(f"{connection.label} serves no model (its /v1/models list is empty)")
        entry = served[0]
    else:
        entry = next((entry for entry in served if entry["id"] == model), None)
        if entry is None and served:
            names = connection.scrub(", ".join(clip_line(entry["id"], 40) for entry in served[:5]))
            raise EngineError(f"{connection.label} does not serve {model!r} (it serves: {names})")
        entry = entry or {"id": model}
    owned_by = str(entry.get("owned_by", ""))
    if draft_stream is None:
        draft_stream = any(connection.host.endswith(host) for host in DRAFT_STREAM_HOSTS)
    return ServerProfile(
        model=entry["id"],
        owned_by=owned_by,
        fim=find_fim_tokens(connection, entry["id"]),
        extras=owned_by == "vllm",
        draft_stream=draft_stream,
    )


def find_fim_tokens(connection: Connection, model: str) -> tuple[str, str, str] | None:
    for family in FIM_FAMILIES:
        ids = tokenize(connection, model, "".join(family))
        if ids is None:
            return None  # the server has no /tokenize: nothing more to learn
        if len(ids) == len(family):
            return family
    return None


def tokenize(connection: Connection, model: str, text: str) -> list[int] | None:
    """The served tokenizer's ids for ``text`` (vLLM's ``/tokenize``); None where there is none."""
    try:
        answer = connection.post_json("tokenize", {"model": model, "prompt": text, "add_special_tokens": False}, at_root=True)
    except EngineError:
        return None
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    return tokens if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens) else None


def seed_canvas(connection: Connection, model: str, text: str, canvas_length: int) -> tuple[list[int], int] | None:
    """(canvas, n): ``text``'s ids, EOS, padding to ``canvas_length``; None where that cannot be built."""
    ids = tokenize(connection, model, text)
    eos, pad = tokenize(connection, model, "<eos>"), tokenize(connection, model, "<pad>")
    if ids is None or eos is None or pad is None or len(eos) != 1 or len(pad) != 1 or len(ids) >= canvas_length:
        return None
    return ids + eos + pad * (canvas_length - len(ids) - 1), len(ids)
