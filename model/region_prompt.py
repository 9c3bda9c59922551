"""The chat prompt for instruction-tuned models: describe the region, ask for its new text only.

Shared by the in-process DiffusionGemma engine (which applies its tokenizer's chat template) and
the remote backend (which sends the same message to a server's ``/v1/chat/completions``), so a
model reads the same wording wherever it runs.
"""

from __future__ import annotations

from sfumato.model.api import InfillRequest
from sfumato.model.project_context import PROMPT_SNIPPETS

CHARS_PER_TOKEN = 3  # rough; the in-process engine refines the cut with its tokenizer
SERVER_PROMPT_TOKENS = 4096  # a served model's prompt budget (``RemoteOptions.context_tokens``)
MAX_SNIPPETS = 4  # of the request's project context, nearest first


def context_window(request: InfillRequest, budget_tokens: int) -> tuple[str, str]:
    """The prefix and suffix that are sent: at most half the budget before, a quarter after.

    The prefix loses its start in steps, so typing at the cursor keeps the prompt's start (and a
    cached encoding of it) unchanged.
    """
    before, after = character_budgets(budget_tokens)
    step = max(1, budget_tokens * CHARS_PER_TOKEN // 32)
    drop = -(-max(0, len(request.prefix) - before) // step) * step
    return request.prefix[drop:], request.suffix[:after]


def context_text(request: InfillRequest, budget_tokens: int) -> str:
    """The request's first ``PROMPT_SNIPPETS`` snippets that fit whole in a quarter of the budget,
    nearest last (next to the document): what a completions prompt puts before the prefix."""
    room = budget_tokens * CHARS_PER_TOKEN // 4
    kept = []
    for snippet in request.context[:PROMPT_SNIPPETS]:
        if len(snippet) <= room:
            kept.append(snippet)
            room -= len(snippet)
    return "".join(reversed(kept))


def character_budgets(budget_tokens: int) -> tuple[int, int]:
    """(characters before, characters after) the region that a prompt of ``budget_tokens`` carries."""
    chars = budget_tokens * CHARS_PER_TOKEN
    return chars // 2, chars // 4


def region_message(request: InfillRequest, budget_tokens: int) -> str:
    """The user message for ``request``, its document cut to about ``budget_tokens`` tokens."""
    prefix, suffix = context_window(request, budget_tokens)
    parts = [
        "You are editing a document. Write only the text that belongs in the region marked <REGION>, "
        "with no explanation and no code fences.",
        f"Document:\n{prefix}<REGION>{suffix}",
    ]
    if request.context:
        parts.insert(1, "Related snippets from other files of the project:\n" + "\n".join(request.context[:MAX_SNIPPETS]))
    if request.is_rewrite:
        parts.append(f"The region currently contains:\n{request.init_text}")
    parts.append(f"Instruction: {request.instruction or 'Fill in the region so that it fits its surroundings.'}")
    return "\n\n".join(parts)


def region_messages(request: InfillRequest, budget_tokens: int) -> list[dict[str, str]]:
    """``region_message`` as a one-turn chat."""
    return [{"role": "user", "content": region_message(request, budget_tokens)}]
