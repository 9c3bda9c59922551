"""Figures for the remote backend: first-chunk latency, tokens/s, cancel-to-stream-closed time.

    python tools/remote_bench.py                 # against a local `transformers serve` (tiny random Llama)
    python tools/remote_bench.py --url URL/v1    # against any server
    python tools/remote_bench.py --json

Each figure is the median of ``--runs`` requests (20 by default). First-chunk latency runs from
sending the request to the first text received; tokens/s divides the server's completion tokens
by the whole round trip. Cancel-to-closed runs from setting the cancel flag (on another thread,
as the editor does) to the stream's generator ending with ``Cancelled``. With the local server,
the script also checks that the server logged each cancel. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from model.api import CancelFlag, Cancelled, InfillRequest  # noqa: E402
from model.remote.backend import connect  # noqa: E402

PREFIX = "def area(width, height):\n    "


def round_trips(backend, runs: int, tokens: int) -> dict:
    first, rates = [], []
    for _ in range(runs):
        list(backend.stream([InfillRequest(prefix=PREFIX, suffix="\n", max_new_tokens=tokens)]))
        trip = backend.round_trip
        first.append(trip.first_chunk_seconds * 1000)
        rates.append(trip.tokens_per_second)
    return {
        "first_chunk_ms_median": round(statistics.median(first), 1),
        "tokens_per_second_median": round(statistics.median(rates), 1),
        "max_new_tokens": tokens,
    }


def cancel_times(backend, runs: int) -> list[float]:
    """ms from cancel.set() to the stream ending, cancelling after the third chunk of a long answer."""
    times = []
    for _ in range(runs):
        cancel, chunks, began = CancelFlag(), 0, [0.0]

        def fire():
            began[0] = time.perf_counter()
            cancel.set()

        try:
            for _ in backend.stream([InfillRequest(prefix=PREFIX, max_new_tokens=3000)], cancel):
                chunks += 1
                if chunks == 3:
                    threading.Thread(target=fire).start()
        except Cancelled:
            times.append((time.perf_counter() - began[0]) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="server URL ending in /v1 (default: start a local transformers serve)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = None
    url = args.url
    if url is None:
        from remote_servers import TransformersServer, build_tiny_llama

        from model.tokenizer import load_tokenizer

        folder = Path(tempfile.mkdtemp(prefix="sfumato-remote-bench-"))
        build_tiny_llama(folder / "model", load_tokenizer(REPO / "resources" / "tokenizer"))
        server = TransformersServer(folder / "model", folder / "server.log")
        server.wait_ready()
        url = server.url
    try:
        backend = connect(url)
        list(backend.stream([InfillRequest(prefix="warm up", max_new_tokens=4)]))
        figures = {"server": url, "model": backend.info.name, **round_trips(backend, args.runs, args.tokens)}
        cancels = cancel_times(backend, max(5, args.runs // 4))
        figures["cancel_to_closed_ms_median"] = round(statistics.median(cancels), 1)
        figures["cancel_runs"] = len(cancels)
        if server is not None:
            deadline = time.monotonic() + 30
            while server.cancels_seen() < len(cancels) and time.monotonic() < deadline:
                time.sleep(0.1)
            figures["cancels_seen_by_server"] = server.cancels_seen()
        backend.close()
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:28} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
