"""Which cached keys each row of the engine's batch sees, and the positions and masks its queries get.

The engine reads a batch of rows over one KV cache: the prompts left-padded to one width, then
each row's settled or committed canvas tokens, as many as that row has (the others padded). A row's
queries must never read another row's padding, and their positions go on after the row's own tokens.
"""

from __future__ import annotations

import torch

from sfumato.model.lm_layout import cached_canvas_mask


class CachedKeys:
    """[R, cached] which cached keys each row sees; ``prompt_width``: of them, the prompts' (the rest: canvases)."""

    def __init__(self, pad_id: int, device: str = "cpu"):
        self.pad_id, self.device = pad_id, device
        self.valid = torch.ones(0, 0, dtype=torch.bool)
        self.prompt_width = 0

    @property
    def width(self) -> int:
        return self.valid.shape[1]

    def start(self, prompts: list[list[int]]) -> None:
        """A new batch: each row sees its own prompt, left-padded to the longest."""
        width = max(len(p) for p in prompts)
        self.prompt_width = width
        self.valid = torch.tensor([[i >= width - len(p) for i in range(width)] for p in prompts], device=self.device)

    def padded_prompts(self, prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ids, attention mask, positions) to read ``start``'s prompts in one pass: each causal,
        never its padding (a pad position sees itself, so its values stay finite)."""
        width = self.prompt_width
        ids = torch.tensor([[self.pad_id] * (width - len(p)) + p for p in prompts], device=self.device)
        causal = torch.tril(torch.ones(width, width, dtype=torch.bool, device=self.device))
        eye = torch.eye(width, dtype=torch.bool, device=self.device)
        mask = (causal[None] & self.valid[:, None, :]) | eye[None]
        return ids, mask[:, None], self.positions(0, width) - width

    def add(self, seen: torch.Tensor) -> None:
        """[R, n]: the keys just kept in the cache, and which row each is its own."""
        self.valid = torch.cat([self.valid, seen], dim=1)

    def add_widths(self, widths: list[int]) -> None:
        """Each row's first ``widths[b]`` of the keys just kept are its own (``tails``' padding is not)."""
        width = max(widths)
        self.add(torch.arange(width, device=self.device)[None] < torch.tensor(widths, device=self.device)[:, None])

    def positions(self, queries_from: int, queries: int) -> torch.Tensor:
        """[R, queries]: each row's positions continue after its own valid cached tokens."""
        start = self.valid.sum(1) + queries_from
        return (start[:, None] + torch.arange(queries, device=self.device)[None]).clamp(min=0)

    def positions_after(self, keys: int, offsets: torch.Tensor) -> torch.Tensor:
        """[R, L]: positions ``offsets`` after each row's own tokens among the first ``keys`` cached."""
        return self.valid[:, :keys].sum(1, keepdim=True) + offsets

    def key_mask(self, queries: int) -> torch.Tensor:
        """[R, 1, queries, cached + queries]: every valid cached key, and the queries both ways."""
        mask = cached_canvas_mask(self.width, queries, self.valid.shape[0], self.device).clone()
        mask[:, :, :, : self.width] &= self.valid[:, None, None, :]
        return mask

    def tails(self, tails: list[list[int]]) -> tuple[torch.Tensor, list[int]]:
        """([R, W] ids, each row's width): rows of tokens after each row's cached text, padded."""
        width = max(len(tail) for tail in tails)
        return torch.tensor([tail + [self.pad_id] * (width - len(tail)) for tail in tails],
                            device=self.device), [len(tail) for tail in tails]

    def tail_mask(self, widths: list[int], width: int, causal_queries: list[list[bool]]) -> torch.Tensor:
        """``key_mask`` for queries that go on from each row's cached text: row b's first
        ``widths[b]`` queries see one another (a causal one only those up to itself) and never the
        padding; a padding query sees only itself, so what it leaves in the cache stays finite."""
        mask = self.key_mask(width)
        cached = self.width
        causal = torch.tril(torch.ones(width, width, dtype=torch.bool, device=self.device))
        eye = torch.eye(width, dtype=torch.bool, device=self.device)
        for b, w in enumerate(widths):
            part = torch.zeros(width, width, dtype=torch.bool, device=self.device)
            part[:w, :w] = True
            reads_left = torch.tensor(causal_queries[b] + [False] * (width - w), dtype=torch.bool, device=self.device)
            part[reads_left] &= causal[reads_left]
            part[w:] = eye[w:]
            mask[b, 0, :, cached:] = part
        return mask
