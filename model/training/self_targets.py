"""The engine's own results on training windows, as targets that teach the model to write them in
fewer passes (self-distillation for parallel decoding, as CLLMs and dParallel do).

    python -m sfumato.model.training.self_targets --out runs/self-targets.jsonl --count 1500

The engine writes a line left to right, about one token a pass: a masked position further right is
rarely 90% sure while the tokens before it are still masked. Trained to predict the engine's own
result from any partly written state (``adapt.py --self-targets``), the model can become sure of
what it would have written anyway, so a pass accepts several tokens without changing the text.
Each line of the output: the prefix's and suffix's token ids as the training layout takes them, the
project snippets (text), and the ids of what the engine wrote there (one line, a few words, or a span).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch

from sfumato.model.api import InfillRequest
from sfumato.model.training.examples import CONTEXT_SHARE, MAX_PREFIX, MAX_SUFFIX, Vocabulary, pick_middle
from sfumato.model.training.lm_corpus import DocumentSampler

BATCH = 8  # requests denoised as one batch: a pass over 8 rows costs far less than 8 passes
SPAN_TOKENS = 32  # what a span (not one line) may write


def windows(sampler: DocumentSampler, rng: random.Random, vocab: Vocabulary):
    """Endless (request, record) pairs: a middle picked as training picks it, the text around it."""
    while True:
        window = sampler.next_window()
        tokens = window.tokens
        if len(tokens) < 24:
            continue
        start, length = pick_middle(tokens, rng, 16, vocab)
        middle = tokens[start : start + length]
        one_line = not any(t in vocab.newlines for t in middle)  # a line, or words inside one
        prefix = tokens[max(0, start - rng.randint(8, MAX_PREFIX)) : start]
        suffix = tokens[start + length : start + length + rng.randint(1, MAX_SUFFIX)]
        prefix_text, suffix_text = vocab.decode(prefix), vocab.decode(suffix)
        snippets = sampler.snippets(window, prefix_text, suffix_text) if rng.random() < CONTEXT_SHARE else ()
        request = InfillRequest(prefix=prefix_text, suffix=suffix_text, one_line=one_line,
                                max_new_tokens=32 if one_line else SPAN_TOKENS, context=tuple(snippets))
        yield request, {"prefix": prefix, "suffix": suffix, "snippets": list(snippets), "one_line": one_line}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="JSONL file; appended to, so a run can go on")
    p.add_argument("--count", type=int, default=1500)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from sfumato.model.loading import load_embedded

    engine = load_embedded()
    vocab = Vocabulary.of(engine.tokenizer)
    done = sum(1 for _ in args.out.open()) if args.out.exists() else 0
    rng = random.Random(f"self-targets:{args.seed}:{done}")
    source = windows(DocumentSampler("train", engine.tokenizer, rng), rng, vocab)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        while done < args.count:
            batch = [next(source) for _ in range(BATCH)]
            for drafts in engine.stream([request for request, _ in batch]):
                pass
            for (_, record), draft in zip(batch, drafts):
                if draft.text.strip():  # an empty result teaches nothing worth a pass
                    out.write(json.dumps({**record, "target": vocab.encode(draft.text)}) + "\n")
                    done += 1
            out.flush()
            print(f"{done} targets", flush=True)


if __name__ == "__main__":
    main()
