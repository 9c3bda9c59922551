"""Python's cycle collector, run on the Qt thread only.

CPython collects cycles on whichever thread happens to allocate past its threshold, and the
inference thread allocates the most. A finished session, its timer, its cursors or a closed
editor left in a cycle were freed there: Qt objects destroyed off their own thread, which Qt does
not allow (seen: 452 such objects in 43 session tests, and a test run that hung for good). So the
automatic collector is switched off and a timer on the Qt thread collects the generations whose
counts are past their thresholds, as the automatic one would have.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

CHECK_MS = 250  # garbage in cycles waits at most this long


class UiThreadCollector(QObject):
    """Collects cycles on the thread it lives on (the Qt thread) while started."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(CHECK_MS)
        self._timer.timeout.connect(self.collect_due)
        self._long_lived = 0  # objects left in the oldest generation by the last full collection

    def start(self) -> None:
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Collect what is left here, then give collection back to Python."""
        self._timer.stop()
        gc.collect()
        gc.enable()

    def collect_due(self) -> None:
        """Collect as CPython's automatic collector would have by now: the oldest generation whose
        count is past its threshold, the oldest only once it has grown by a quarter (a full
        collection with the model loaded takes 0.1-0.2 s, too long to run every half minute)."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if counts[0] <= thresholds[0]:
            return
        if counts[1] <= thresholds[1]:
            gc.collect(0)
        elif counts[2] > thresholds[2] and len(gc.get_objects(2)) - self._long_lived > self._long_lived // 4:
            gc.collect(2)
            self._long_lived = len(gc.get_objects(2))
        else:
            gc.collect(1)
