"""A large vocabulary on the CPU: the tied embedding held as int8 rows, read as input and output layer.

Gemma 3's embedding (262,144 tokens x 640) is also its output layer: 671 MB of float32 that every
pass reads, 143 ms of a 16-position pass whose 18 layers take 92 ms (measured here, one thread).
Held as int8 rows with a scale per row (168 MB):

- the output layer: torch's fbgemm int8 linear layers (activations rounded to 8 bits at each call)
  rank every token (23 ms), but agree with float32's top token at only 85% of positions, so the
  ``SHORTLIST`` tokens they find likeliest are scored again from the rows against the float32
  hidden state (32 ms in all); the rest keep their rough logits, which only fill the softmax's
  normaliser. The rows' own rounding, with float32 activations, agrees with float32's top token at
  97% of 2,400 positions of this project's files and at 99.9% of those float32 is more than 30%
  sure of (KL 0.001);
- the input layer: the rows a sequence reads, widened to float32.

``lm_cpu`` holds the rest of the model's CPU form and its copy in the user's cache.
"""

from __future__ import annotations

import warnings

import torch

SHORTLIST = 64
LARGE_VOCABULARY = 100_000  # an embedding above this many tokens is held as int8 rows
SLICE_ROWS = 16_384  # rows widened to float32 at a time while they are rounded or packed


def is_large(model) -> bool:
    return model.get_input_embeddings().num_embeddings > LARGE_VOCABULARY


def int8_rows(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows [V, H] int8, scales [V] float32): each row rounded symmetrically to its largest value."""
    rows = torch.empty(weight.shape, dtype=torch.int8)
    scales = torch.empty(weight.shape[0])
    for start in range(0, weight.shape[0], SLICE_ROWS):
        part = weight[start : start + SLICE_ROWS].float()
        scale = part.abs().amax(dim=1).clamp(min=1e-12) / 127
        rows[start : start + SLICE_ROWS] = (part / scale[:, None]).round().clamp(-127, 127).to(torch.int8)
        scales[start : start + SLICE_ROWS] = scale
    return rows, scales


def _fbgemm_slices(rows: torch.Tensor, scales: torch.Tensor) -> torch.nn.ModuleList:
    """torch's dynamic int8 linear layers (fbgemm) over the rows, ``SLICE_ROWS`` each (the same
    integers: a row widened by its scale rounds back to itself)."""
    from torch.ao.nn.quantized.dynamic import Linear

    parts = torch.nn.ModuleList()
    for start in range(0, rows.shape[0], SLICE_ROWS):
        scale = scales[start : start + SLICE_ROWS]
        part = rows[start : start + SLICE_ROWS].float().mul_(scale[:, None])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the quantised tensor API's deprecation notice
            weight = torch.quantize_per_channel(part, scale.double(), torch.zeros(len(part), dtype=torch.int64), 0, torch.qint8)
            linear = Linear(rows.shape[1], len(part), bias_=False, dtype=torch.qint8)
        linear.set_weight_bias(weight, None)
        parts.append(linear)
    return parts


class RowsEmbedding(torch.nn.Module):
    """The input layer read from int8 rows: a token's row times its scale, in float32, times the
    base's own embedding scale (Gemma multiplies its embeddings by the square root of their width)."""

    def __init__(self, rows: torch.Tensor, scales: torch.Tensor, embed_scale: float = 1.0):
        super().__init__()
        self.rows = torch.nn.Parameter(rows, requires_grad=False)
        self.scales = torch.nn.Parameter(scales, requires_grad=False)
        self.embed_scale = embed_scale

    @property
    def num_embeddings(self) -> int:
        return self.rows.shape[0]

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.rows[input_ids].float() * (self.scales[input_ids] * self.embed_scale).unsqueeze(-1)


class ShortlistHead(torch.nn.Module):
    """Logits [..., V] as the tied output layer computes them, with ``SHORTLIST`` of them exact."""

    def __init__(self, rough: torch.nn.ModuleList):
        super().__init__()
        self.rough = rough
        self.rows = self.scales = None  # the embedding's own (``install``)

    @classmethod
    def packed(cls, rows: torch.Tensor, scales: torch.Tensor) -> ShortlistHead:
        return cls(_fbgemm_slices(rows, scales))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden.float()
        logits = hidden.new_empty(*hidden.shape[:-1], self.rows.shape[0])  # filled a slice at a time: one copy
        for start, part in zip(range(0, self.rows.shape[0], SLICE_ROWS), self.rough):
            logits[..., start : start + part.out_features] = part(hidden)
        top = logits.topk(min(SHORTLIST, logits.shape[-1]), dim=-1).indices
        exact = (self.rows[top].float() @ hidden.unsqueeze(-1)).squeeze(-1) * self.scales[top]
        return logits.scatter_(-1, top, exact)


def with_rows(model):
    """``model`` (a float32 causal LM with a tied output layer) with its embedding as int8 rows and
    the shortlist head when its vocabulary is large; unchanged otherwise (or when already so). In place."""
    embedding = model.get_input_embeddings()
    if isinstance(embedding, RowsEmbedding) or not is_large(model) or model.lm_head.weight is not embedding.weight:
        return model
    rows, scales = int8_rows(embedding.weight.detach())
    return install(model, RowsEmbedding(rows, scales, float(getattr(embedding, "embed_scale", 1.0))),
                   ShortlistHead.packed(rows, scales))


def install(model, embedding: RowsEmbedding, head: ShortlistHead):
    """``model`` reading ``embedding`` as its input layer and ``head`` (made from the same rows) as
    its output layer, which scores its shortlist from the embedding's rows. In place."""
    model.set_input_embeddings(embedding)
    head.rows, head.scales = embedding.rows.data, embedding.scales.data
    model.lm_head = head
    return model
