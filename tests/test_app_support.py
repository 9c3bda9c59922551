"""Shared helpers for the app tests: a qasync loop, a scripted fake backend, an editor with an engine.

The fake backend yields deterministic drafts and can hold between passes, so a test can type
while a run is "denoising". Real-model runs use the ``tiny_model_dir`` fixture instead.
"""

from __future__ import annotations

import asyncio
import os
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtGui import QTextCursor

from sfumato.model.api import Candidate, Draft, ModelInfo, TokenState


def select(editor, anchor: int, position: int) -> None:
    """Put the editor's cursor at ``position`` with its anchor at ``anchor`` (Qt positions)."""
    cursor = editor.textCursor()
    cursor.setPosition(anchor)
    cursor.setPosition(position, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)


class FakeBackend:
    """Rewrites every region to ``<k:...>`` text over ``passes`` passes; ``hold`` pauses between them."""

    info = ModelInfo(name="fake", backend="masked-diffusion", device="cpu", parameters=0, instruction_tuned=False)

    def __init__(self, passes: int = 4, alternatives: int | None = None, fail: bool = False):
        self.passes = passes
        self.fail = fail
        self.hold = threading.Event()  # set: wait for ``advance`` between passes
        self._go = threading.Semaphore(0)
        self.requests = []

    def advance(self) -> None:
        self._go.release()

    @staticmethod
    def result(index: int, alternative: int = 0) -> str:
        return f"<{index}.{alternative} new text>"

    def _drafts(self, count: int, alternatives: int, step: int, final: bool) -> tuple[Draft, ...]:
        drafts = []
        for index in range(count):
            candidates = []
            for alternative in range(alternatives):
                text = self.result(index, alternative)
                settled = len(text) * step // self.passes
                tokens = tuple(
                    TokenState(ch if i < settled else "#", 0.9 if i < settled else 0.2, i < settled)
                    for i, ch in enumerate(text)
                )
                candidates.append(Candidate("".join(t.text for t in tokens), tokens))
            drafts.append(Draft(step, tuple(candidates), final, forward_passes=step, generated_tokens=step * 3))
        return tuple(drafts)

    def _run(self, count, alternatives, cancel):
        for step in range(1, self.passes + 1):
            if cancel is not None:
                cancel.raise_if_set()
            if self.fail and step == 2:
                raise RuntimeError("the fake model broke")
            yield self._drafts(count, alternatives, step, final=step == self.passes)
            if self.hold.is_set() and step < self.passes:
                while not self._go.acquire(timeout=0.05):
                    if cancel is not None:
                        cancel.raise_if_set()

    def stream(self, requests, cancel=None):
        self.requests.append(tuple(requests))
        return self._run(len(requests), requests[0].n_alternatives, cancel)

    def stream_template(self, template, cancel=None):
        self.requests.append(template)
        return self._run(len(template.max_new_tokens), 1, cancel)


@pytest.fixture(scope="session")
def qasync_loop(qapp):
    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture
def window(qtbot, qasync_loop, tmp_path):  # noqa: F811 - fixture
    """A shown main window with a fresh settings file and no model; closed without questions."""
    from PySide6.QtCore import QSettings

    from sfumato.app.mainwindow import MainWindow

    store = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(qasync_loop, store)
    window.show()
    yield window
    for document in window.tabs.documents():  # no "save changes?" prompt when the test closes it
        if document.editor.session is not None:
            document.editor.session.reject()
        document.editor.document().setModified(False)
    window.close()
    window.deleteLater()


def with_fake_model(window, qtbot, backend=None):
    """Load ``backend`` (a FakeBackend by default) as the window's model."""
    window.ai.worker.start(lambda: backend or FakeBackend(), "fake")
    qtbot.waitUntil(lambda: window.ai.worker.info is not None, timeout=10000)


def make_engine(qasync_loop, backend, qtbot):
    from sfumato.app.worker_adapter import WorkerAdapter

    engine = WorkerAdapter(qasync_loop)
    engine.start(lambda: backend, "fake")
    qtbot.waitUntil(lambda: engine.info is not None or engine.error is not None, timeout=30000)
    return engine


def window_with_model(qapp, loop, spec: str, settings_dir, **settings):
    """A shown main window whose engine has loaded ``spec`` (module fixtures have no qtbot)."""
    import time

    from PySide6.QtCore import QSettings

    from sfumato.app.mainwindow import MainWindow

    store = QSettings(str(settings_dir / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(loop, store, model_spec=spec)
    window.settings.device = "cpu"
    for name, value in settings.items():
        setattr(window.settings, name, value)
    window.apply_settings()
    window.show()
    window.ai.start_engine()
    start = time.monotonic()
    while window.ai.worker.loading and time.monotonic() - start < 120:
        qapp.processEvents()
        time.sleep(0.01)
    assert window.ai.worker.info is not None, window.ai.worker.error
    return window
