"""Speed figures of a served model, for ``sfumato bench --model URL`` and ``tools/remote_bench.py``.

First-chunk latency runs from sending a request to the first text received; tokens/s divides
the completion tokens (the server's count where it sends usage) by the whole round trip;
cancel-to-closed runs from setting the cancel flag, on another thread as the editor does, to
the stream's generator ending with ``Cancelled``. Medians over ``runs`` requests.
"""

from __future__ import annotations

import statistics
import threading
import time

from sfumato.model.api import CancelFlag, Cancelled, InfillRequest

PREFIX = "def area(width, height):\n    "


def remote_figures(backend, runs: int = 20, tokens: int = 64, cancels: int = 5) -> dict:
    list(backend.stream([InfillRequest(prefix="warm up", max_new_tokens=4)]))
    first, rates = [], []
    for _ in range(runs):
        list(backend.stream([InfillRequest(prefix=PREFIX, suffix="\n", max_new_tokens=tokens)]))
        trip = backend.round_trip
        first.append(trip.first_chunk_seconds * 1000 if trip.first_chunk_seconds is not None else float("nan"))
        rates.append(trip.tokens_per_second)
    closed = [cancel_to_closed_ms(backend) for _ in range(cancels)]
    return {
        "server": backend.info.device,
        "runs": runs,
        "max_new_tokens": tokens,
        "first_chunk_ms_median": round(statistics.median(first), 1),
        "tokens_per_second_median": round(statistics.median(rates), 1),
        "tokens_counted_by_server": backend.round_trip.tokens_exact,
        "cancel_to_closed_ms_median": round(statistics.median(closed), 2),
        "cancel_runs": cancels,
    }


def cancel_to_closed_ms(backend, after_chunks: int = 3) -> float:
    """Cancel a long answer after a few chunks; ms from ``cancel.set()`` to the stream's end."""
    cancel, chunks, fired = CancelFlag(), 0, []

    def fire() -> None:
        fired.append(time.perf_counter())
        cancel.set()

    try:
        for _ in backend.stream([InfillRequest(prefix=PREFIX, max_new_tokens=3000)], cancel):
            chunks += 1
            if chunks == after_chunks:
                threading.Thread(target=fire).start()
    except Cancelled:
        return (time.perf_counter() - fired[0]) * 1000
    return float("nan")  # the answer ended before the cancel
