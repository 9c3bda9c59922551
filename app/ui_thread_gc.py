"""Python's cycle collector, run on the Qt thread only.

CPython collects cycles on whichever thread happens to allocate past its threshold, and the
inference thread allocates the most. A finished session, its timer, its cursors or a closed
editor left in a cycle were freed there: Qt objects destroyed off their own thread, which Qt does
not allow (seen: 452 such objects in 43 session tests; a CI run hung in a session test). So the
automatic collector is switched off and a timer on the Qt thread collects the young generations
when their counts are past their thresholds, as the automatic one would have, and the oldest (a
full collection: 0.1-0.6 s with the model loaded, the GIL held, so any thread's stalls the window)
where the user does not wait on it: after a model's load, at a quiet tick.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

CHECK_MS = 250  # garbage in cycles waits at most this long
_running: UiThreadCollector | None = None  # the process's collector, while started


class UiThreadCollector(QObject):
    """Collects cycles on the thread it lives on (the Qt thread) while started."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(CHECK_MS)
        self._timer.timeout.connect(self.collect_due)
        self._long_lived = 0  # objects left in the oldest generation by the last full collection
        self._promoted = 0  # objects moved into it since

    def start(self) -> None:
        global _running
        gc.disable()
        self._long_lived, self._promoted = len(gc.get_objects(2)), 0
        self._timer.start()
        _running = self

    def stop(self) -> None:
        """Collect what is left here, then give collection back to Python."""
        global _running
        self._timer.stop()
        gc.collect()
        gc.enable()
        _running = None

    def collect_due(self) -> None:
        """Collect what CPython's automatic collector would have by now, the oldest generation at a
        quiet moment. A busy tick (past the youngest generation's threshold) collects the young
        generations as CPython would; the oldest, 0.1-0.6 s with the model loaded, is collected at
        the first quiet tick once a quarter more objects have moved into it since its last
        collection (at the end of a model's load, not in the first rewrite or the next keys
        typed), or at a busy one once they have doubled. Counting the oldest generation's objects
        takes 5-10 ms, so the young ones moved into it are counted instead."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if counts[0] > thresholds[0]:
            if counts[1] > thresholds[1]:
                self._collect_young()
            else:
                gc.collect(0)
            if self._promoted > self._long_lived:
                self._collect_all()
        elif counts[1]:  # quiet, with survivors of the busy ticks before it
            self._collect_young()
            if self._promoted > self._long_lived // 4:
                self._collect_all()

    def _collect_young(self) -> None:
        young = len(gc.get_objects(0)) + len(gc.get_objects(1))
        self._promoted += young - gc.collect(1)  # the survivors move into the oldest generation

    def _collect_all(self) -> None:
        gc.collect(2)
        self._long_lived, self._promoted = len(gc.get_objects(2)), 0


def collect_after_load() -> None:
    """Collect everything now, on the Qt thread, where a model's load has just ended: the half
    million objects it made are counted as long-lived at once, so no full collection falls in the
    first rewrite (0.3 s seen there) or the keys typed next."""
    if _running is not None:
        _running._collect_all()
