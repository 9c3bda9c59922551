"""The model's own score of candidate texts for a region: mean log-probability per token.

A candidate ``t_1 .. t_n`` is scored left to right on the canvas, as the model was trained to
fill it, ``READ_STRIDE`` tokens at a time: row ``j`` shows the tokens before ``j * READ_STRIDE``,
masks the rest, and reads the probabilities of the next ``READ_STRIDE`` tokens at their positions
(the end token is read too, so a candidate that should go on loses). A stride of 1 would be exact
left-to-right teacher forcing; 8 costs an eighth of the rows (each canvas row is a full decoder
pass over the canvas) and reads each token with up to 7 before it hidden, as in a denoising pass.
All rows of all candidates share one prompt encoding and run as one batch of one decoder pass, and
the vocabulary projection is applied only at the read positions. The mean over ``n + 1`` tokens
is the score: how much the model believes the text, whoever wrote it.

Only absorbing-mask models with the FIM layout (the embedded one) can be scored this way; for
others ``mean_log_probs`` returns None.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from sfumato.model.api import InfillRequest
from sfumato.model.diffusion_gemma_library import decoder_hidden, encode_prompt
from sfumato.model.tokenizer import encode_text

READ_STRIDE = 8


def can_score(backend) -> bool:
    return getattr(backend, "layout", None) is not None and getattr(backend.profile, "canvas_noise", "") == "mask"


@torch.inference_mode()
def mean_log_probs(backend, request: InfillRequest, texts: Sequence[str]) -> list[float] | None:
    """Per text, the mean log-probability (nats) of its tokens and end token after ``request``'s prompt."""
    if not can_score(backend):
        return None
    if not texts:
        return []
    model, layout, C, device = backend.model, backend.layout, backend.canvas_length, backend.device
    prompt = backend.prompt_ids(request)
    P = len(prompt)
    cache = encode_prompt(model, torch.tensor([prompt], device=device), torch.arange(P, device=device)[None, :])
    rows, positions, targets, owners = [], [], [], []
    for owner, text in enumerate(texts):
        ids = encode_text(backend.tokenizer, text)[: C - 1]
        target = layout.canvas_target(ids, C)
        n = len(ids) + 1
        for shown in range(0, n, READ_STRIDE):
            rows.append(target[:shown] + [layout.mask] * (C - shown))
            for i in range(shown, min(n, shown + READ_STRIDE)):
                positions.append((len(rows) - 1, i))
                targets.append(target[i])
                owners.append(owner)
    R = len(rows)
    cache.batch_repeat_interleave(R)
    hidden = decoder_hidden(
        model, cache, torch.tensor(rows, device=device), torch.arange(P, P + C, device=device)[None, :]
    )  # (R, C, H)
    where = torch.tensor(positions, device=device)  # (T, 2): row, canvas position of each read token
    read = hidden[where[:, 0], where[:, 1]]  # (T, H)
    logits = model.lm_head(read).float()
    cap = model.final_logit_softcapping
    if cap:
        logits = torch.tanh(logits / cap) * cap
    chosen = logits.log_softmax(-1)[torch.arange(len(targets), device=device), torch.tensor(targets, device=device)]
    totals = torch.zeros(len(texts), device=device).index_add_(0, torch.tensor(owners, device=device), chosen)
    counts = torch.bincount(torch.tensor(owners, device=device), minlength=len(texts)).clamp_min(1)
    return (totals / counts).tolist()
