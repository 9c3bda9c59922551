"""Reuse of the encoder's KV cache between requests whose prompts start the same way.

The idea of llama.cpp's ``cache_prompt``: pressing Ctrl+K again at the same place sends the same
prompt, and moving on in the same document keeps the prompt's start (``<bos><fim_prefix>`` and
the document up to the first changed token). The cache of the last prompt is kept; a new prompt
encodes only the tokens after the longest common start.

A cache is cut back to a common start only when every layer still holds all its tokens (a
sliding-window layer past its window has dropped the oldest and cannot be rolled back); an
identical prompt reuses the whole cache in any case.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from transformers.cache_utils import Cache

MIN_REUSE = 8  # below this many shared tokens a copy costs about what it saves


class PromptCache:
    """The encoder cache of one prompt (batch of one), handed out as private copies."""

    def __init__(self):
        self._prompt: tuple[int, ...] = ()
        self._cache: Cache | None = None
        self.reused_tokens = 0  # of the last lookup: tokens not encoded again

    def lookup(self, prompt: Sequence[int], batch_size: int) -> tuple[Cache | None, int]:
        """A copy of the stored cache cut to what ``prompt`` shares with it, for ``batch_size`` rows,
        and the number of prompt tokens it holds; ``(None, 0)`` when nothing can be reused."""
        self.reused_tokens = 0
        if self._cache is None:
            return None, 0
        shared = _common_start(self._prompt, prompt)
        if shared < MIN_REUSE:
            return None, 0
        cache = _copied(self._cache)
        if shared < len(self._prompt):
            if not _can_cut(cache):
                return None, 0
            cache.crop(shared - len(self._prompt))
        if batch_size > 1:
            cache.batch_repeat_interleave(batch_size)
        self.reused_tokens = shared
        return cache, shared

    def store(self, prompt: Sequence[int], cache: Cache) -> None:
        """Keep a copy of ``cache`` (row 0) as the cache of ``prompt``."""
        self._prompt, self._cache = tuple(prompt), _copied(cache, first_row=True)

    def clear(self) -> None:
        self._prompt, self._cache = (), None


def _copied(cache: Cache, first_row: bool = False) -> Cache:
    """A copy of ``cache`` (of its first row only, with ``first_row``). Its key and value tensors are
    cloned by torch, which lets go of the GIL while it copies; ``copy.deepcopy`` held it for the
    whole copy (tens of MB), so the window's thread stalled ~20 ms at every request."""
    memo: dict = {}
    for layer in cache.layers:
        for tensor in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(tensor, torch.Tensor):
                memo[id(tensor)] = (tensor[:1] if first_row else tensor).clone()
    return copy.deepcopy(cache, memo)


def _can_cut(cache: Cache) -> bool:
    """Whether ``crop`` can roll every layer back exactly."""
    return cache.is_croppable and all(
        layer.get_seq_length() < layer.sliding_window for layer in cache.layers if getattr(layer, "is_sliding", False)
    )


def _common_start(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
