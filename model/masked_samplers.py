"""Samplers for masked diffusion: which still-masked positions to unmask after a pass.

After every pass the backend samples a token for each masked position of a gap and scores it
(``Scores``). A sampler looks at the masked positions of the gap's current block and returns the
ones to commit; the others are masked again for the next pass ("remasking"). Committed tokens
never change. Every sampler commits at least ``quota`` positions (the uniform schedule:
gap length / steps), so a run never takes more than ``steps`` passes per gap; the adaptive ones
may commit more when the model is sure.

Shapes: n = masked positions in the gap's current block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

ORDERS = ("confidence", "margin", "entropy")


@dataclass(frozen=True)
class Scores:
    """What one pass says about n masked positions."""

    confidence: torch.Tensor  # (n,) probability of the sampled token
    margin: torch.Tensor  # (n,) top-1 minus top-2 probability
    entropy: torch.Tensor  # (n,) entropy of the predicted distribution, in nats

    def certainty(self, order: str) -> torch.Tensor:
        """Higher is surer. The three orderings of Dream 7B (Ye et al., arXiv 2508.15487, sec. 4):
        ``confidence`` (their maskgit_plus), ``margin`` (topk_margin) and ``entropy`` (negative entropy)."""
        if order == "confidence":
            return self.confidence
        if order == "margin":
            return self.margin
        if order == "entropy":
            return -self.entropy
        raise ValueError(f"unknown order {order!r}; choose one of {', '.join(ORDERS)}")


class Sampler(Protocol):
    block_length: int | None  # semi-autoregressive block size; None: the whole gap at once

    def select(self, scores: Scores, quota: int) -> torch.Tensor:
        """Indices (into the n scored positions) to commit this pass, at least ``min(quota, n)``."""
        ...


def _surest(scores: Scores, order: str, count: int) -> torch.Tensor:
    """Indices of the ``count`` surest positions, surest first."""
    return torch.argsort(scores.certainty(order), descending=True, stable=True)[:count]


@dataclass(frozen=True)
class LowConfidenceRemasking:
    """Commit the ``quota`` surest positions, remask the rest; semi-autoregressive blocks.

    LLaDA (Nie et al., arXiv 2502.09992, sec. 2.4 and appendix B.3): low-confidence remasking, with
    the gap cut into blocks of ``block_length`` that are denoised left to right. With
    ``block_length=None`` and a Dream ordering this is Dream's default decoding.
    """

    order: str = "confidence"
    block_length: int | None = 32

    def select(self, scores: Scores, quota: int) -> torch.Tensor:
        return _surest(scores, self.order, quota)


@dataclass(frozen=True)
class ConfidenceThreshold:
    """Commit every position whose confidence exceeds ``threshold`` (at least ``quota``).

    Fast-dLLM (Wu et al., arXiv 2505.22618, sec. 3.3): confidence-aware parallel decoding inside
    semi-autoregressive blocks; positions the model is sure of are decoded in the same pass.
    """

    threshold: float = 0.9
    block_length: int | None = 32

    def select(self, scores: Scores, quota: int) -> torch.Tensor:
        sure = int((scores.confidence > self.threshold).sum())
        return _surest(scores, "confidence", max(quota, sure))


@dataclass(frozen=True)
class EntropyBounded:
    """Commit the longest run of surest positions whose summed entropy, less its largest term,
    stays within ``gamma`` (at least ``quota``).

    EB-sampler (Ben-Hamu et al., arXiv 2505.24857, sec. 4): the entropy sum bounds the error of
    unmasking the tokens together instead of one by one, so low-entropy runs go in one pass.
    """

    gamma: float = 0.1
    order: str = "confidence"
    block_length: int | None = None

    def select(self, scores: Scores, quota: int) -> torch.Tensor:
        ranked = _surest(scores, self.order, len(scores.entropy))
        entropy = scores.entropy[ranked]
        bound = torch.cumsum(entropy, 0) - torch.cummax(entropy, 0).values
        within = int((bound <= self.gamma).sum())  # bound only grows along the ranking
        return ranked[: max(quota, within)]


SAMPLERS = {
    "llada": LowConfidenceRemasking(),
    "dream-confidence": LowConfidenceRemasking(order="confidence", block_length=None),
    "dream-margin": LowConfidenceRemasking(order="margin", block_length=None),
    "dream-entropy": LowConfidenceRemasking(order="entropy", block_length=None),
    "fast-dllm": ConfidenceThreshold(),
    "eb": EntropyBounded(),
}
"""Named samplers; ``llada`` is the default."""
