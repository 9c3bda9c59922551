"""When a run's drafts are shown: the animation is paced, never the model.

The worker may run far ahead of the screen (the embedded model can finish a rewrite within a few
frames), which would show one frame of noise and then the result. So each shown pass stays on
screen at least ``MIN_PASS_MS``. While the model runs, the newest pass that arrived is shown next
(at most once per frame, as before: rendering coalesces). Once the result is in, the passes still
waiting are skipped evenly so that the animation ends about ``ANIMATION_MS`` after it began; a
model slower than that is shown pass by pass as it goes. ``finish_now`` jumps to the result (the
user accepted it before the animation reached it). The slow-motion setting slows the worker, not
this: its passes simply arrive further apart.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer

from sfumato.model.api import Draft

FRAME_MS = 16  # the first pass waits one frame, so a burst of passes is drawn once
MIN_PASS_MS = 90  # every shown pass stays at least this long
ANIMATION_MS = 1000  # a run the model finished early is animated in about this long

Drafts = tuple[Draft, ...]


class DraftPacer(QObject):
    """Calls ``show(drafts, final)`` for the passes worth showing, spaced by ``MIN_PASS_MS``."""

    def __init__(self, parent: QObject, show: Callable[[Drafts, bool], None]):
        super().__init__(parent)
        self._show = show
        self._waiting: list[Drafts] = []  # arrived, not shown yet, oldest first
        self._result: Drafts | None = None  # the final drafts, once they are in
        self._first_shown: float | None = None  # time.monotonic() seconds
        self._last_shown: float | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)

    @property
    def has_result(self) -> bool:
        """The final drafts are in (shown or still on their way to the screen)."""
        return self._result is not None

    def add(self, drafts: Drafts, final: bool = False) -> None:
        """A pass from the worker; the result (``final``) is shown at once when nothing is waiting
        and the pass before it has had its time."""
        if self._result is not None:
            return
        self._waiting.append(drafts)
        if final:
            self._result = drafts
            if len(self._waiting) == 1 and self._ms_to_wait() <= 0:
                self._tick()
                return
        if not self._timer.isActive():
            first_wait = FRAME_MS if self._last_shown is None else 0
            self._timer.start(max(first_wait, math.ceil(self._ms_to_wait())))

    def finish_now(self) -> None:
        """Show the result now if it is in and not shown yet."""
        if self._result is not None and self._waiting:
            self._waiting = [self._result]
            self._timer.stop()
            self._show_next()

    def stop(self) -> None:
        self._timer.stop()
        self._waiting.clear()

    def _ms_to_wait(self) -> float:
        if self._last_shown is None:
            return 0.0
        return MIN_PASS_MS - 1000 * (time.monotonic() - self._last_shown)

    def _tick(self) -> None:
        wait = self._ms_to_wait()
        if wait > 0:  # a timer may fire a little early: the minimum is kept by the clock
            self._timer.start(math.ceil(wait))
        elif self._waiting:
            self._show_next()

    def _show_next(self) -> None:
        index = self._next_index()
        drafts = self._waiting[index]
        del self._waiting[: index + 1]
        self._last_shown = time.monotonic()
        self._first_shown = self._first_shown or self._last_shown
        if self._waiting:
            self._timer.start(max(1, math.ceil(self._ms_to_wait())))
        self._show(drafts, drafts is self._result)

    def _next_index(self) -> int:
        """The newest pass while the model runs; with the result in, the pass that spaces what is
        left evenly over the frames left until ``ANIMATION_MS``."""
        waiting = len(self._waiting)
        if self._result is None:
            return waiting - 1
        if MIN_PASS_MS <= 0:
            return 0
        elapsed = 1000 * (time.monotonic() - self._first_shown) if self._first_shown is not None else 0.0
        frames = max(1, int((ANIMATION_MS - elapsed) // MIN_PASS_MS))
        return max(0, round(waiting / frames) - 1)
