"""Progress and cancel while ``from_pretrained`` reads the weights.

transformers 5 reads a checkpoint tensor by tensor (over all its shards) in one loop that it
wraps in a progress bar, "Loading weights". Its public ``set_tqdm_hook`` lets us replace that bar:
``watch_loading`` reports (tensors read, total) after each tensor and raises ``Cancelled`` at the
next tensor once the cancel flag is set, so a 50 GB load stops within one tensor of a click.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from sfumato.model.api import CancelFlag

# One model load at a time in a process: transformers' loading sets process-wide state while it
# builds a model (weight-initialisation switches, empty-weight patches), so two threads loading at
# once (a replaced worker still loading beside its successor, or a test's) could leave one model's
# parameters uninitialised or on the meta device.
LOAD_LOCK = threading.RLock()

Report = Callable[[int, int], None]  # (tensors read, tensors in all)
LOADING_BAR = "Loading weights"  # the description transformers gives its loading loop's bar


class _Watched:
    """Stands in for transformers' bar over the loading loop (it only iterates it)."""

    def __init__(self, iterable: Iterable, report: Report | None, cancel: CancelFlag | None):
        self._iterable = iterable
        self._report = report
        self._cancel = cancel

    def __iter__(self) -> Iterator:
        total = len(self._iterable) if hasattr(self._iterable, "__len__") else 0
        for done, item in enumerate(self._iterable):
            if self._cancel is not None:
                self._cancel.raise_if_set()
            if self._report is not None:
                self._report(done, total)
            yield item
        if self._report is not None:
            self._report(total, total)

    def close(self) -> None:
        pass


@contextmanager
def watch_loading(report: Report | None = None, cancel: CancelFlag | None = None):
    """While inside, transformers' weight loading reports to ``report`` and obeys ``cancel``."""
    from transformers.utils import logging as transformers_logging

    def hook(factory, args, kwargs):
        if kwargs.get("desc") != LOADING_BAR:
            return factory(*args, **kwargs)
        iterable = args[0] if args else kwargs["iterable"]
        return _Watched(iterable, report, cancel)

    previous = transformers_logging.set_tqdm_hook(hook)
    try:
        yield
    finally:
        transformers_logging.set_tqdm_hook(previous)


def terminal_bar() -> Report:
    """A ``Report`` drawing a tqdm bar on stderr (tqdm draws nothing when stderr is not a terminal)."""
    from tqdm import tqdm

    bar: list = []

    def report(done: int, total: int) -> None:
        if not bar:
            bar.append(tqdm(total=total, desc="Loading weights", unit="tensor", disable=None, leave=False))
        bar[0].update(done - bar[0].n)
        if done >= total:
            bar[0].close()

    return report
