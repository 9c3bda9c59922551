"""The editor's side of the inference worker: loading in the background, hopping back to Qt.

Worker callbacks arrive on the worker thread; every one is handed to the asyncio (qasync) loop
with ``loop.call_soon_threadsafe`` and runs on the Qt thread. ``torch`` is imported only inside
``load`` on the worker thread, so the window never waits for it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Signal

from sfumato.app.server_status import server_status_line
from sfumato.app.ui_thread_gc import collect_after_load
from sfumato.model.api import Backend, CancelFlag, Cancelled, Draft, InfillRequest, ModelInfo, TemplateRequest
from sfumato.model.untrusted_text import terminal_safe
from sfumato.model.worker import InferenceWorker, Job

Progress = Callable[[int, int], None]  # (tensors read, tensors in all), called on the worker thread
Loader = Callable[[Progress, CancelFlag], Backend]


def load_from_spec(spec: str, device: str | None, quantize: str | None, allow_downloads: bool,
                   trust_remote_code: bool, remote_model: str | None = None,
                   admits: Callable[[str], bool] | None = None) -> Loader:
    """A loader for ``start_loading``; imports the model code (and torch) only when called."""

    def load(progress: Progress, cancel: CancelFlag) -> Backend:
        from sfumato.model.loading import load_backend

        return load_backend(
            spec, device=device, quantize=quantize, allow_downloads=allow_downloads,
            trust_remote_code=trust_remote_code, remote_model=remote_model, progress=progress, cancel=cancel,
            admits=admits,
        )

    return load


class WorkerAdapter(QObject):
    """The UI's adapter to the one inference worker (model/worker.py) of the application: it
    starts and stops the worker and hands its callbacks to the Qt thread.

    ``status`` carries a status-bar line: loading, loaded (model and device) or the load error;
    the error is written to stderr too, for a window started from a terminal.
    """

    status = Signal(str)
    load_progress = Signal(int, int)  # tensors read, tensors in all
    served = Signal(str)  # a served model's status line: on load, then after every finished job

    def __init__(self, loop: asyncio.AbstractEventLoop, parent: QObject | None = None):
        super().__init__(parent)
        self._loop = loop
        self._worker: InferenceWorker | None = None
        self.info: ModelInfo | None = None
        self.error: str | None = None
        self.slow_motion_ms = 0
        self._generation = 0
        self._load_cancel: CancelFlag | None = None

    @property
    def loading(self) -> bool:
        return self._worker is not None and self.info is None and self.error is None

    def start(self, load: Callable[[], Backend], label: str) -> None:
        """(Re)start the worker with ``load``; the previous model, if any, is dropped."""
        self.stop()
        self.info, self.error = None, None
        generation = self._generation = self._generation + 1  # a replaced worker's news is dropped

        def on_loaded(backend: Backend) -> None:
            self._loop.call_soon_threadsafe(self._on_loaded, generation, backend.info)
            self._report_server(backend, generation)

        self._worker = InferenceWorker(
            load,
            on_loaded=on_loaded,
            on_load_error=lambda error: self._loop.call_soon_threadsafe(self._on_load_error, generation, error),
        )
        self.status.emit(f"Loading model {label}…")
        self._worker.start()

    def start_loading(self, loader: Loader, label: str) -> None:
        """``start`` with a loader that reports its progress (``load_progress``) and can be cancelled."""
        cancel = CancelFlag()
        generation = self._generation + 1  # the one ``start`` is about to take
        percent = [-1]

        def progress(done: int, total: int) -> None:  # on the worker thread, once per tensor
            if total and done * 100 // total != percent[0]:
                percent[0] = done * 100 // total
                self._loop.call_soon_threadsafe(self._on_progress, generation, done, total)

        self.start(lambda: loader(progress, cancel), label)
        self._load_cancel = cancel

    def hold(self, line: str) -> None:
        """No model for now (the previous one is dropped, nothing is loaded); the status says ``line``."""
        self.stop()
        self.info, self.error = None, None
        self._generation += 1
        self.status.emit(line)

    def cancel_loading(self) -> None:
        """Stop a load in progress at its next tensor; editing goes on without a model."""
        if self.loading:
            self.stop()
            self._generation += 1  # the stopped worker's own news of the cancel is dropped
            self._on_load_error(self._generation, Cancelled("loading was cancelled"))

    def warm(self, request: InfillRequest) -> None:
        """Let a loaded local model read ``request``'s prompt ahead of time (model/worker.py)."""
        if self._worker is not None and self.info is not None:
            self._worker.warm(request)

    def stop(self) -> None:
        if self._load_cancel is not None:
            self._load_cancel.set()
            self._load_cancel = None
        if self._worker is not None:
            self._worker.stop(timeout=2.0)
            self._worker = None

    def _on_loaded(self, generation: int, info: ModelInfo) -> None:
        if generation != self._generation:
            return
        self.info = info
        line = f"Model {info.name} on {info.device}"
        if info.precision:
            line += f", {info.precision}"
        if info.memory_bytes:
            line += f", {_size(info.memory_bytes)} of weights"
        self.status.emit(line)
        collect_after_load()

    def _on_progress(self, generation: int, done: int, total: int) -> None:
        if generation == self._generation and self.loading:
            self.load_progress.emit(done, total)

    def _on_load_error(self, generation: int, error: BaseException) -> None:
        if generation != self._generation:
            return
        self.error = str(error) or type(error).__name__
        if not isinstance(error, Cancelled):  # the user's own cancel needs no terminal line
            _tell_terminal(f"no model: {self.error}")
        self.status.emit(f"No model: {self.error}. Editing works; AI edits are off.")

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

        worker, generation = self._worker, self._generation

        def done(drafts: tuple[Draft, ...]) -> None:
            loop.call_soon_threadsafe(on_done, drafts)
            self._report_server(worker.backend, generation)

        return self._worker.submit(
            work,
            on_draft,
            on_done=done,
            on_error=lambda error: loop.call_soon_threadsafe(on_error, error),
            on_cancelled=lambda: loop.call_soon_threadsafe(on_cancelled),
            owner=owner,
        )

    def _report_server(self, backend: Backend | None, generation: int) -> None:
        """On the worker thread (which owns the backend): a served model's line, to the Qt thread."""
        if backend is not None and backend.info.served:  # its connection as ``ModelInfo`` describes it
            line = server_status_line(backend.info.device, backend.round_trip, backend.encrypted, backend.streams_drafts)
            self._loop.call_soon_threadsafe(self._on_served, generation, line)

    def _on_served(self, generation: int, line: str) -> None:
        if generation == self._generation:
            self.served.emit(line)

def model_label(info: ModelInfo) -> str:
    """The status bar's short label: name, device, precision (its first clause: the whole is in the
    tooltip's status line) and the weights' memory."""
    precision = info.precision.split(",", 1)[0]
    parts = [info.name, info.device, precision, _size(info.memory_bytes) if info.memory_bytes else ""]
    return " · ".join(part for part in parts if part)


def _tell_terminal(line: str) -> None:
    """``line`` on stderr as the ``sfumato`` command writes its errors."""
    print(f"sfumato: {terminal_safe(line)}", file=sys.stderr, flush=True)


def _size(count: int) -> str:
    return f"{count / 1e9:.1f} GB" if count >= 1e9 else f"{count / 1e6:.1f} MB"
