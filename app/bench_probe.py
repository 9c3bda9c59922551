"""Measurements that need a process of their own, run by ``sfumato bench`` as subprocesses.

    python -m sfumato.app.bench_probe window          print the time the main window is shown
    python -m sfumato.app.bench_probe ready SPEC      print the time the model is loaded
    python -m sfumato.app.bench_probe stall SPEC      print the largest GUI-thread stall during a rewrite
    python -m sfumato.app.bench_probe typing SPEC     print the largest GUI-thread stall typing in a 40 MB file
    python -m sfumato.app.bench_probe rss SPEC [N]    print peak resident memory after N infills (20)

Each prints one JSON line. Times are ``time.time()`` stamps, so the parent, which noted when it
started the process, gets process start -> event, interpreter start-up included.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
import time

SAMPLE = '''def mean(values):
    """Return the arithmetic mean of a non-empty list of numbers."""
    total = sum(values)
    return total / len(values)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
'''
REWRITE = "    total = sum(values)"


def _window(spec: str | None):
    """A real main window on an offscreen qasync loop, with settings kept out of the user's."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import asyncio

    import qasync
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from sfumato.app.mainwindow import MainWindow, first_show
    from sfumato.app.ui_thread_gc import UiThreadCollector

    app = QApplication.instance() or QApplication([])
    UiThreadCollector(app).start()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    store = QSettings(os.path.join(tempfile.mkdtemp(), "bench.ini"), QSettings.Format.IniFormat)
    window = MainWindow(loop, store, spec)
    return app, loop, window, first_show


async def _loaded(main_window) -> None:
    import asyncio

    while main_window.ai.worker.info is None:
        if main_window.ai.worker.error:
            raise RuntimeError(main_window.ai.worker.error)
        await asyncio.sleep(0.05)


def _ticking():
    """(a 1 ms GUI-thread timer, not started; the list its ticks' times go to)."""
    from PySide6.QtCore import QTimer

    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(1)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    return timer, ticks


def window() -> dict:
    from PySide6.QtCore import QTimer

    app, loop, main_window, _ = _window(None)
    shown: dict = {}

    def note() -> None:
        shown.update(shown_at=time.time(), torch_imported="torch" in sys.modules)
        app.quit()

    main_window.show()
    QTimer.singleShot(0, note)
    app.exec()
    return shown


def ready(spec: str) -> dict:
    from sfumato.model.loading import load_backend

    load_backend(spec)
    return {"ready_at": time.time()}


def stall(spec: str) -> dict:
    """Largest gap between ticks of a 1 ms GUI-thread timer while a rewrite denoises in place."""
    import asyncio

    from PySide6.QtGui import QTextCursor

    _, loop, main_window, first_show = _window(spec)
    main_window.tabs.new_document()
    first_show(main_window)
    editor = main_window.tabs.current_editor()
    editor.setPlainText(SAMPLE)

    async def measure() -> dict:
        await _loaded(main_window)
        timer, ticks = _ticking()
        cursor = editor.textCursor()
        start = SAMPLE.index(REWRITE)
        cursor.setPosition(start)
        cursor.setPosition(start + len(REWRITE), QTextCursor.MoveMode.KeepAnchor)
        editor.setTextCursor(cursor)
        timer.start()
        session = main_window.ai.starter.rewrite(editor, 0.8)
        while session.state == "running":  # until the result is shown, waiting for Tab or Esc
            await asyncio.sleep(0.01)
        timer.stop()
        session.reject()
        return {"max_stall_ms": 1000 * max(b - a for a, b in itertools.pairwise(ticks)), "ticks": len(ticks)}

    with loop:
        return loop.run_until_complete(measure())


LARGE_FILE_MB = 40  # the largest file Sfumato opens is 64 MB
TYPED_KEYS = 24  # typed in the middle of it, a pause a cursor rest answers after every fourth


def typing(spec: str) -> dict:
    """Largest gap between ticks of a 1 ms GUI-thread timer while keys are typed in the middle of a
    ``LARGE_FILE_MB`` file, with pauses long enough for the resting cursor's work (the warm, a
    suggestion) to start: what reads the whole text shows here."""
    import asyncio

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from sfumato.app.aicontroller import REST_MS

    _, loop, main_window, first_show = _window(spec)
    path = os.path.join(tempfile.mkdtemp(), "large.py")
    with open(path, "w", encoding="utf-8") as file:
        file.write(SAMPLE * (LARGE_FILE_MB * 2**20 // len(SAMPLE)))
    first_show(main_window)
    editor = main_window.tabs.open_path(path).editor

    async def measure() -> dict:
        await _loaded(main_window)
        cursor = editor.textCursor()
        cursor.setPosition(editor.document().characterCount() // 2)
        editor.setTextCursor(cursor)
        timer, ticks = _ticking()
        timer.start()
        for key in range(TYPED_KEYS):
            QTest.keyClick(editor, Qt.Key.Key_A)
            await asyncio.sleep(2 * REST_MS / 1000 if key % 4 == 3 else 0.1)
        timer.stop()
        editor.document().setModified(False)
        return {"max_stall_ms": 1000 * max(b - a for a, b in itertools.pairwise(ticks)), "ticks": len(ticks)}

    with loop:
        return loop.run_until_complete(measure())


def rss(spec: str, infills: str = "20") -> dict:
    from sfumato.model.api import InfillRequest
    from sfumato.model.loading import load_backend
    from sfumato.model.soak import peak_resident_mb

    backend = load_backend(spec)
    for index in range(int(infills)):
        request = InfillRequest(prefix=SAMPLE[: 40 + 10 * index], suffix=SAMPLE[40 + 10 * index :], max_new_tokens=32, seed=index)
        for _ in backend.stream([request]):
            pass
    return {"peak_rss_mb": peak_resident_mb()}


if __name__ == "__main__":
    probe, *rest = sys.argv[1:]
    result = {"window": window, "ready": ready, "stall": stall, "typing": typing, "rss": rss}[probe](*rest)
    print(json.dumps(result), flush=True)
    os._exit(0)  # skip Qt and worker-thread teardown: the figure is out
