"""Log-probabilities of chosen tokens at chosen positions, from last hidden states and the output layer.

The vocabulary's logits are made a block of positions at a time and only the wanted entries kept:
every position's logits at once is [L, V] float32 (147 positions of Gemma's 262,144 tokens: 154 MB,
and as much again for the softmax), which raised the editor's peak memory by 700 MB.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

LOGITS_PER_BLOCK = 1 << 22  # 16 MB of float32 logits at a time: 85 positions of SmolLM2's 49k tokens, 16 of Gemma's 262k


def block_positions(vocabulary_size: int) -> int:
    """Positions whose logits over a vocabulary of this size are made at once."""
    return max(1, LOGITS_PER_BLOCK // vocabulary_size)


def log_probs_at(hidden: torch.Tensor, head: Callable[[torch.Tensor], torch.Tensor], positions: torch.Tensor,
                 tokens: torch.Tensor, chunk: int) -> torch.Tensor:
    """[P]: log p(tokens[i]) at positions[i] of ``hidden`` [L, H] (``head``: hidden states -> logits),
    the logits made ``chunk`` positions at a time; a position may be asked for several tokens."""
    out = torch.zeros(len(positions), device=hidden.device)
    for start in range(0, len(hidden), chunk):
        wanted = (positions >= start) & (positions < start + chunk)
        if wanted.any():
            log_probs = head(hidden[start : start + chunk]).float().log_softmax(-1)
            out[wanted] = log_probs[positions[wanted] - start, tokens[wanted]]
    return out


def target_log_probs(hidden: torch.Tensor, head: Callable[[torch.Tensor], torch.Tensor], targets: list[int],
                     chunk: int) -> torch.Tensor:
    """[L]: each position's log-probability of its target (0 where it has none, -1)."""
    wanted = torch.tensor(targets, device=hidden.device)
    positions = torch.arange(len(targets), device=hidden.device)
    return log_probs_at(hidden, head, positions, wanted.clamp(min=0), chunk).masked_fill(wanted < 0, 0.0)
