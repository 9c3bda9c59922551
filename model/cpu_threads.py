"""How many threads the engine's passes use on the CPU: the cores other programs leave free.

A pass is many small products, and torch's threads meet after each one. When another program
keeps a core busy (a build, a test run, a training run), the thread that shares its core arrives
late at every meeting and the others wait for it: on a 2-core machine beside one busy program, a
line took more than twice as long on two threads as on one (session 39, float32, 6 lines with
their prompts read, beside a one-thread training run: 41.6 s on two threads, 17.2 s on one), while
on idle cores two threads are faster (8 lines: 22.2 s against 27.9 s).
So before each call of the model the engine looks at how much CPU time the other programs took
since it last looked (the system's busy time less this process's own) and uses the cores they
left, at least one and at most what it started with.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psutil
import torch

WINDOW_S = 0.5  # the shortest time a look covers: /proc/stat counts in 10 ms ticks
STALE_S = 2.0  # a look over a longer time (the engine was idle) tells the past, not now


def system_busy_s() -> float:
    """CPU seconds every core has spent busy since boot (all programs, this one included)."""
    times = psutil.cpu_times()  # (Linux counts a guest's time in user time too)
    return sum(times) - sum(getattr(times, name, 0.0) for name in ("idle", "iowait", "guest", "guest_nice"))


def own_busy_s() -> float:
    """CPU seconds this process has spent, all its threads together."""
    return time.process_time()


class CpuThreads:
    """How many threads the next call should use: the cores other programs leave (``count``)."""

    def __init__(self, most: int, cores: int, system: Callable[[], float] = system_busy_s,
                 own: Callable[[], float] = own_busy_s, clock: Callable[[], float] = time.monotonic):
        self.most, self.cores, self.threads = most, cores, most
        self._system, self._own, self._clock = system, own, clock
        self._last = (clock(), system(), own())

    def count(self) -> int:
        """The thread count for the next call, looked at again once ``WINDOW_S`` has passed (after
        ``STALE_S`` without a call: every thread, until the next look)."""
        now = self._clock()
        elapsed = now - self._last[0]
        if elapsed < WINDOW_S:
            return self.threads
        system, own = self._system(), self._own()
        others = max(0.0, (system - self._last[1]) - (own - self._last[2])) / elapsed  # cores' worth
        self._last = (now, system, own)
        fresh = elapsed <= STALE_S  # else start from every thread; the next look, WINDOW_S on, judges now
        self.threads = max(1, min(self.most, round(self.cores - others))) if fresh else self.most
        return self.threads


def follow_free_cores(*modules: torch.nn.Module) -> None:
    """Make every call of each of ``modules`` (where a backend's calls enter the model: a base
    model, which every head's call goes through, and any part a backend calls on its own) first
    take the cores other programs leave free, on the thread that calls it (the inference worker)."""
    threads = CpuThreads(torch.get_num_threads(), psutil.cpu_count() or 1)

    def before_call(_module, _args) -> None:  # (a hook that returned a value would replace the call's arguments)
        count = threads.count()
        if torch.get_num_threads() != count:  # each thread has its own count: set it on the one calling
            torch.set_num_threads(count)

    for module in modules:
        module.register_forward_pre_hook(before_call)
