"""Training examples cut from the local corpus, laid out as the engine lays out a request.

``ExampleMaker`` draws one example at a time from a ``random.Random``; ``batch_stream`` yields
collated batches, made in the training process (``workers=0``: the stream resumes exactly from a
checkpointed RNG state) or in worker processes, so that a GPU is not starved by per-example
tokenisation (each worker's stream is seeded by the run's seed, the step it starts at and the
worker's index: a resumed run draws fresh, reproducible examples rather than the interrupted
stream's).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from sfumato.model.training.corpus import Document, heldout_part, iter_documents
from sfumato.model.layout import Layout
from sfumato.model.tokenizer import encode_text

# Share of each example kind in a batch. "line": one whole line (or its tail from a cursor inside
# it); "block": 2-8 whole lines; "span": a random character span; "empty": nothing to insert;
# "continue": plain continuation, no suffix; "gaps": 2-4 gaps filled jointly with gap sentinels.
KIND_WEIGHTS = {"line": 0.38, "block": 0.2, "span": 0.14, "empty": 0.04, "continue": 0.16, "gaps": 0.08}
# Documents are drawn in proportion to their length times their source's weight: the standard
# library and the Python documentation are smaller but cleaner than third-party sources.
SOURCE_WEIGHTS = {"stdlib": 3.0, "python-docs": 2.0, "site-packages": 1.0}


@dataclass
class Example:
    prompt: list[int]
    canvas: list[int]


class ExampleMaker:
    """Draws training examples from documents, laid out with ``sfumato.model.layout``."""

    def __init__(self, documents: list[Document], tokenizer, prompt_length: int, canvas_length: int,
                 fim_order: str = "psm"):
        self.documents = documents
        self.tokenizer = tokenizer
        self.layout = Layout(tokenizer, fim_order)
        self.prompt_length = prompt_length
        self.canvas_length = canvas_length
        weights = [len(doc.text) * SOURCE_WEIGHTS.get(doc.source, 1.0) for doc in documents]
        self.cumulative = list(_cumsum(weights))
        self.kinds = list(KIND_WEIGHTS)
        self.kind_weights = list(KIND_WEIGHTS.values())
        self.context_chars = prompt_length * 6  # more than a prompt holds; fim_prompt trims tokens

    def batch(self, rng: random.Random, size: int) -> dict[str, torch.Tensor]:
        """``size`` examples, collated as the model takes them."""
        return collate([self.sample(rng) for _ in range(size)], self.tokenizer.pad_token_id)

    def sample(self, rng: random.Random) -> Example:
        kind = rng.choices(self.kinds, self.kind_weights)[0]
        doc = self.documents[bisect.bisect_right(self.cumulative, rng.random() * self.cumulative[-1])]
        if kind == "gaps":
            example = self._gaps(doc.text, rng)
            if example is not None:
                return example
            kind = "line"
        start, end = self._middle_span(kind, doc.text, rng)
        text = doc.text
        prefix = text[max(0, start - self.context_chars) : start]
        suffix = "" if kind == "continue" else text[end : end + self.context_chars]
        return self._fim(prefix, text[start:end], suffix, rng)

    def _middle_span(self, kind: str, text: str, rng: random.Random) -> tuple[int, int]:
        """Character span [start, end) of the middle for a single-gap example of ``kind``."""
        pos = rng.randrange(len(text))
        if kind in ("line", "block"):
            lines = 1 if kind == "line" else rng.randint(2, 8)
            start = text.rfind("\n", 0, pos) + 1
            end = start
            for _ in range(lines):
                nl = text.find("\n", end)
                end = len(text) if nl < 0 else nl
                if nl < 0 or len(text) == end + 1:
                    break
                if _ != lines - 1:
                    end += 1
            if kind == "line" and rng.random() < 0.4 and end > start:
                start = rng.randrange(start, end)  # cursor inside the line: complete its tail
            return start, end
        if kind == "span":
            return pos, min(len(text), pos + int(math.exp(rng.uniform(0, math.log(300)))))
        if kind == "empty":
            return pos, pos
        return pos, min(len(text), pos + rng.randint(20, 1200))  # continue

    def _fim(self, prefix: str, middle: str, suffix: str, rng: random.Random) -> Example:
        prefix_ids, middle_ids, suffix_ids = (encode_text(self.tokenizer, s) for s in (prefix, middle, suffix))
        return self._blocks(middle_ids, rng, lambda budget: self.layout.fim_prompt(prefix_ids, suffix_ids, budget))

    def _blocks(self, middle_ids: list[int], rng: random.Random, prompt_for) -> Example:
        """One canvas of ``middle_ids`` (closed by EOS): a random block, earlier blocks in the prompt."""
        C = self.canvas_length
        n_blocks = len(middle_ids) // C + 1
        max_block = min(n_blocks - 1, (self.prompt_length // 2) // C)
        block = rng.randint(0, max_block)
        done = middle_ids[: block * C]
        prompt = prompt_for(self.prompt_length - len(done)) + done
        return Example(prompt, self.layout.canvas_target(middle_ids[block * C :], C))

    def _gaps(self, text: str, rng: random.Random) -> Example | None:
        """Joint fill of 2-4 gaps (single lines or short spans) in a window of the document."""
        n_gaps = rng.randint(2, 4)
        lo = rng.randrange(len(text))
        window = text[lo : lo + self.prompt_length * 3]
        cuts: list[tuple[int, int]] = []
        for _ in range(n_gaps):
            pos = rng.randrange(len(window)) if window else 0
            if rng.random() < 0.6:
                start = window.rfind("\n", 0, pos) + 1
                nl = window.find("\n", pos)
                end = len(window) if nl < 0 else nl
            else:
                start, end = pos, min(len(window), pos + rng.randint(1, 40))
            cuts.append((start, end))
        cuts.sort()
        if any(b[0] <= a[1] for a, b in zip(cuts, cuts[1:])):
            return None  # overlapping or touching gaps: draw another kind
        segments, fills, last = [], [], 0
        for start, end in cuts:
            segments.append(window[last:start])
            fills.append(window[start:end])
            last = end
        segments.append(window[last:])
        seg_ids = [encode_text(self.tokenizer, s) for s in segments]
        middle: list[int] = []
        for gap, fill in zip(self.layout.gaps, fills):
            middle += [gap, *encode_text(self.tokenizer, fill)]
        if len(middle) + 1 > self.canvas_length:
            return None
        # The window is sized in characters: trim the first segment's start and the last's end to fit.
        room = self.prompt_length - (sum(map(len, seg_ids[1:-1])) + n_gaps + 3)
        if room < 8:
            return None
        keep_last = min(len(seg_ids[-1]), room // 2)
        seg_ids[0] = seg_ids[0][max(0, len(seg_ids[0]) - (room - keep_last)) :]
        seg_ids[-1] = seg_ids[-1][:keep_last]
        prompt = self.layout.multi_gap_prompt(seg_ids)
        return Example(prompt, self.layout.canvas_target(middle, self.canvas_length))


def _cumsum(values):
    total = 0.0
    for value in values:
        total += value
        yield total


def collate(examples: list[Example], pad: int) -> dict[str, torch.Tensor]:
    """Left-pad prompts to one width (as the engine does), stack canvases."""
    width = max(len(e.prompt) for e in examples)
    input_ids = torch.full((len(examples), width), pad, dtype=torch.long)
    attention_mask = torch.zeros((len(examples), width), dtype=torch.bool)
    for row, example in enumerate(examples):
        input_ids[row, width - len(example.prompt) :] = torch.tensor(example.prompt)
        attention_mask[row, width - len(example.prompt) :] = True
    canvas = torch.tensor([e.canvas for e in examples], dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "canvas": canvas}


def train_documents(sources: Sequence[str] | None = None) -> list[Document]:
    """Train-split documents of ``sources`` (None: every source found)."""
    return [doc for doc in iter_documents("train", sources) if len(doc.text) > 50]


def dev_documents(sources: Sequence[str] | None = None) -> list[Document]:
    return [doc for doc in iter_documents("heldout", sources) if heldout_part(doc.name) == "dev" and len(doc.text) > 50]


class _WorkerBatches(torch.utils.data.IterableDataset):
    """Endless collated batches, made inside a DataLoader worker with that worker's own RNG."""

    def __init__(self, maker: ExampleMaker, batch_size: int, seed: str):
        self.maker, self.batch_size, self.seed = maker, batch_size, seed

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        worker = torch.utils.data.get_worker_info()
        rng = random.Random(f"{self.seed}:{worker.id if worker else 0}")
        while True:
            yield self.maker.batch(rng, self.batch_size)


def batch_stream(maker: ExampleMaker, batch_size: int, rng: random.Random, workers: int,
                 seed: str) -> Iterator[dict[str, torch.Tensor]]:
    """Collated batches for ever: from ``rng`` in this process, or from ``workers`` processes."""
    if workers == 0:
        while True:
            yield maker.batch(rng, batch_size)
    loader = torch.utils.data.DataLoader(
        _WorkerBatches(maker, batch_size, seed), batch_size=None, num_workers=workers, prefetch_factor=8,
        persistent_workers=True,
    )
    yield from loader
