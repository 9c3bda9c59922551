"""Soak test: many consecutive infills in one process, watching resident memory.

    python -m sfumato.model.soak --model embedded --n 1000

Requests vary in prefix, suffix, length, rewrite strength and alternatives, and every tenth one
is cancelled mid-run, so the loop exercises every path the editor uses. Resident memory is read
after a warm-up (the first requests allocate caches for good) and at the end; the goal is growth
under 5%.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

from sfumato.model.api import CancelFlag, Cancelled, InfillRequest
from sfumato.model.loading import load_backend

WARM_UP = 20


def resident_mb() -> float:
    """Current resident set size in MiB (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * resource.getpagesize() / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_resident_mb() -> float:
    """This process's peak resident set size in MiB.

    On Linux this is ``VmHWM``, the high-water mark of the process's own memory map. ``ru_maxrss``
    would not do for a child process: it survives fork and exec, so a child reports its parent's
    peak when that was higher.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def random_request(rng: random.Random, index: int) -> InfillRequest:
    words = ["def", "return", "value", "self", "import", "for", "in", "if", "else", "print", "中文", "😀", "\t", "\r\n"]
    prefix = " ".join(rng.choice(words) for _ in range(rng.randint(0, 200)))
    suffix = " ".join(rng.choice(words) for _ in range(rng.randint(0, 100)))
    rewrite = rng.random() < 0.3
    return InfillRequest(
        prefix=prefix,
        suffix=suffix,
        max_new_tokens=rng.randint(1, 96),
        init_text=" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) if rewrite else None,
        strength=rng.random() if rewrite else 1.0,
        n_alternatives=rng.choice([1, 1, 1, 2]),
        seed=index,
    )


def soak(backend, n: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    start_mb = None
    began = time.perf_counter()
    cancelled = 0
    for index in range(n):
        if index == WARM_UP:
            start_mb = resident_mb()
        cancel = CancelFlag()
        try:
            for passes, _ in enumerate(backend.stream([random_request(rng, index)], cancel)):
                if index % 10 == 9 and passes == 1:
                    cancel.set()
        except Cancelled:
            cancelled += 1
    end_mb = resident_mb()
    start_mb = start_mb if start_mb is not None else end_mb
    return {
        "requests": n,
        "cancelled": cancelled,
        "rss_start_mb": round(start_mb, 1),
        "rss_end_mb": round(end_mb, 1),
        "growth_percent": round(100 * (end_mb - start_mb) / start_mb, 2),
        "seconds": round(time.perf_counter() - began, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(soak(load_backend(args.model, device="cpu"), args.n, args.seed)))


if __name__ == "__main__":
    main()
