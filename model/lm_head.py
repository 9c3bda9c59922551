"""A large vocabulary's output layer on the CPU: int8 finds the likeliest tokens, float32 scores them.

Gemma 3's output layer (262,144 tokens x 640, tied to its input embedding) is 671 MB of float32
that every pass reads: measured here (one thread, 16 positions over a cached 450-token prompt),
143 ms of a pass whose 18 layers take 92 ms. An int8 copy (a scale per token; 168 MB) takes 19 ms
but agrees with float32's top token at only 85% of a prompt's positions (KL 0.06), so it only
shortlists: the ``SHORTLIST`` tokens it finds likeliest at a position are scored again exactly,
from the embedding's rows, and the rest keep their int8 logits (they only fill the softmax's
normaliser). The greedy token is float32's whenever int8 ranks it among the shortlist. The
int8 rows are made and run in slices of ``SLICE_ROWS`` (23 ms; with the shortlist's scoring 32 ms).

The input embedding is kept in float16 (335 MB instead of 671 MB: the resident memory goal) and
its rows widened to float32 where they are read; the rest of the model runs in float32. A model
read in float16 (Gemma's merged copy in the cache is saved so) never holds its embedding in float32:
the int8 rows are made a slice at a time.
"""

from __future__ import annotations

import warnings

import torch

SHORTLIST = 64
LARGE_VOCABULARY = 100_000  # an output layer above this many tokens gets the int8 shortlist
SLICE_ROWS = 16_384  # rows widened to float32 at a time while the int8 copy is made


def is_large(model) -> bool:
    return model.get_input_embeddings().num_embeddings > LARGE_VOCABULARY


def _int8_slices(rows: torch.Tensor) -> torch.nn.ModuleList:
    """torch's dynamic int8 linear layers (fbgemm) over ``rows`` [V, H], ``SLICE_ROWS`` rows each:
    a symmetric scale per row, the rows widened to float32 a slice at a time."""
    from torch.ao.nn.quantized.dynamic import Linear

    parts = torch.nn.ModuleList()
    for start in range(0, rows.shape[0], SLICE_ROWS):
        part = rows[start : start + SLICE_ROWS].float()
        scales = (part.abs().amax(dim=1).clamp(min=1e-12) / 127).double()
        weight = torch.quantize_per_channel(part, scales, torch.zeros(len(part), dtype=torch.int64), 0, torch.qint8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the dynamic quantisation API's deprecation notice
            linear = Linear(rows.shape[1], len(part), bias_=False, dtype=torch.qint8)
        linear.set_weight_bias(weight, None)
        parts.append(linear)
    return parts


class ShortlistHead(torch.nn.Module):
    """Logits [..., V] as the tied output layer computes them, with ``SHORTLIST`` of them exact."""

    def __init__(self, rows: torch.Tensor):
        super().__init__()
        self.rough = _int8_slices(rows)
        self.rows = rows  # the exact rows: the input embedding's

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden.float()
        logits = torch.cat([part(hidden) for part in self.rough], dim=-1)
        top = logits.topk(SHORTLIST, dim=-1).indices
        exact = (self.rows[top].float() @ hidden.unsqueeze(-1)).squeeze(-1)
        return logits.scatter(-1, top, exact)


def _widened(module, inputs, output):
    return output.float()


def slim(model):
    """``model`` (a causal LM with a tied output layer, in float32 or float16) with the shortlist
    head, a float16 input embedding and the rest in float32 when its vocabulary is large;
    unchanged otherwise. In place."""
    embedding = model.get_input_embeddings()
    if not is_large(model) or model.lm_head.weight is not embedding.weight:
        return model
    for child in model.model.children():
        if child is not embedding:
            child.float()
    embedding.weight = torch.nn.Parameter(embedding.weight.detach().half(), requires_grad=False)
    embedding.register_forward_hook(_widened)
    model.lm_head = ShortlistHead(embedding.weight)
    return model
