"""The editor's side of the inference worker: loading in the background, hopping back to Qt.

Worker callbacks arrive on the worker thread; every one is handed to the asyncio (qasync) loop
with ``loop.call_soon_threadsafe`` and runs on the Qt thread. ``torch`` is imported only inside
``load`` on the worker thread, so the window never waits for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Signal

from model.api import Backend, Draft, InfillRequest, ModelInfo, TemplateRequest
from model.worker import InferenceWorker, Job


def load_from_spec(spec: str, device: str | None, allow_downloads: bool, trust_remote_code: bool) -> Callable[[], Backend]:
    """A ``load`` callable for the worker; imports the model code (and torch) only when called."""

    def load() -> Backend:
        from model.loading import load_backend

        return load_backend(spec, device=device, allow_downloads=allow_downloads, trust_remote_code=trust_remote_code)

    return load


class WorkerAdapter(QObject):
    """The UI's adapter to the one inference worker (model/worker.py) of the application: it
    starts and stops the worker and hands its callbacks to the Qt thread.

    ``status`` carries a status-bar line: loading, loaded (model and device) or the load error.
    """

    status = Signal(str)
    loaded = Signal(object)  # ModelInfo
    load_failed = Signal(str)

    def __init__(self, loop: asyncio.AbstractEventLoop, parent: QObject | None = None):
        super().__init__(parent)
        self._loop = loop
        self._worker: InferenceWorker | None = None
        self.info: ModelInfo | None = None
        self.error: str | None = None
        self.slow_motion_ms = 0
        self._generation = 0

    @property
    def loading(self) -> bool:
        return self._worker is not None and self.info is None and self.error is None

    def start(self, load: Callable[[], Backend], label: str) -> None:
        """(Re)start the worker with ``load``; the previous model, if any, is dropped."""
        self.stop()
        self.info, self.error = None, None
        generation = self._generation = self._generation + 1  # a replaced worker's news is dropped
        self._worker = InferenceWorker(
            load,
            on_loaded=lambda backend: self._loop.call_soon_threadsafe(self._on_loaded, generation, backend.info),
            on_load_error=lambda error: self._loop.call_soon_threadsafe(self._on_load_error, generation, error),
        )
        self.status.emit(f"Loading model {label}…")
        self._worker.start()

    def stop(self) -> None:
        if self._worker is not None:
            self._worker.stop(timeout=2.0)
            self._worker = None

    def _on_loaded(self, generation: int, info: ModelInfo) -> None:
        if generation != self._generation:
            return
        self.info = info
        self.status.emit(f"Model {info.name} on {info.device}")
        self.loaded.emit(info)

    def _on_load_error(self, generation: int, error: BaseException) -> None:
        if generation != self._generation:
            return
        self.error = str(error) or type(error).__name__
        self.status.emit(f"No model: {self.error}. Editing works; AI edits are off.")
        self.load_failed.emit(self.error)

    def submit(
        self,
        work: Sequence[InfillRequest] | TemplateRequest,
        on_drafts: Callable[[tuple[Draft, ...]], None],
        on_done: Callable[[tuple[Draft, ...]], None],
        on_error: Callable[[BaseException], None],
        on_cancelled: Callable[[], None],
        owner: object,
    ) -> Job | None:
        """Run ``work`` (requests, or a template); every callback runs on the Qt thread. None
        without a model. A new job of the same ``owner`` cancels the one before."""
        if self._worker is None or self.error is not None:
            return None
        loop = self._loop
        slow = self.slow_motion_ms / 1000.0

        def on_draft(drafts: tuple[Draft, ...]) -> None:
            loop.call_soon_threadsafe(on_drafts, drafts)
            if slow:
                time.sleep(slow)  # on the worker thread: slows the passes, never the window

        return self._worker.submit(
            work,
            on_draft,
            on_done=lambda drafts: loop.call_soon_threadsafe(on_done, drafts),
            on_error=lambda error: loop.call_soon_threadsafe(on_error, error),
            on_cancelled=lambda: loop.call_soon_threadsafe(on_cancelled),
            owner=owner,
        )
