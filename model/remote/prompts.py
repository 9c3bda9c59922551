"""Request bodies for a server: the prompt is built here, because servers reject or ignore ``suffix``.

Three layouts, chosen per request by what the server offers (``ServerProfile``):

* chat (``/v1/chat/completions``): the in-process engine's chat prompt (``sfumato.model.region_prompt``);
  used for rewrites and instructions, and for infill when the model has no FIM tokens;
* FIM (``/v1/completions``): prefix-suffix-middle with the served tokenizer's own markers;
* prefix only (``/v1/completions``): the text before the region, continued; the fallback for a
  server with neither FIM tokens nor a chat template.

Only parameters every server accepts are sent: no ``suffix`` (vLLM answers 400, ``transformers
serve`` appends it to the answer), no ``temperature``, ``seed`` or ``logit_bias`` (vLLM refuses
them for diffusion models), no ``n`` (alternatives are separate requests).
"""

from __future__ import annotations

import random

from sfumato.model.api import InfillRequest
from sfumato.model.region_prompt import context_text, context_window, region_messages
from sfumato.model.remote.server import ServerProfile


def request_body(profile: ServerProfile, request: InfillRequest, budget_tokens: int) -> tuple[str, dict]:
    """(path, body) for one streamed request."""
    max_tokens = request_tokens(request)
    body: dict = {"model": profile.model, "max_tokens": max_tokens, "stream": True,
                  "stream_options": {"include_usage": True}}  # the server's own token count, in a last chunk
    if profile.chat and (profile.fim is None or request.is_rewrite or request.instruction):
        path = "chat/completions"
        body["messages"] = region_messages(request, budget_tokens)
    elif profile.fim is not None:
        path = "completions"
        body["prompt"] = fim_prompt(profile.fim, request, budget_tokens)
    else:
        path = "completions"
        body["prompt"] = context_text(request, budget_tokens) + context_window(request, budget_tokens)[0]
    if profile.draft_stream:
        body["diffusing"] = True
    return path, body


def request_tokens(request: InfillRequest) -> int:
    """Tokens to ask for: a rewrite may need at least about as many as the text it replaces."""
    if request.is_rewrite:
        return max(request.max_new_tokens, len(request.init_text) // 2 + 16)
    return request.max_new_tokens


def fim_prompt(markers: tuple[str, str, str], request: InfillRequest, budget_tokens: int) -> str:
    """Prefix-suffix-middle, with the same context window as the chat prompt."""
    before, after = context_window(request, budget_tokens)
    begin, hole, end = markers
    return f"{begin}{context_text(request, budget_tokens)}{before}{hole}{after}{end}"


def diffusion_extras(request: InfillRequest, canvas: list[int] | None, selection_tokens: int) -> dict:
    """vLLM's per-request diffusion settings (``vllm_xargs``).

    ``diffusion_max_steps`` carries ``steps``. A rewrite seeds the canvas (exactly
    ``canvas_length`` ids: the selection's tokens, EOS, padding) and pins the fraction
    ``1 - strength`` of the selection's positions, chosen with the request's seed; the rest of
    the canvas stays free, so the new text may be shorter or longer.
    """
    extras: dict = {}
    if request.steps is not None:
        extras["diffusion_max_steps"] = request.steps
    if canvas:
        keep = round(selection_tokens * (1.0 - request.strength))
        extras["diffusion_seed_canvas"] = list(canvas)
        extras["diffusion_pinned"] = sorted(random.Random(request.seed).sample(range(selection_tokens), keep))
    return extras
