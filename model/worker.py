"""The inference worker: one thread that owns the model and runs one job at a time.

The editor (or any other caller) submits requests and gets callbacks *on the worker thread*;
it is the caller's job to hop back to its own thread (the editor uses
``loop.call_soon_threadsafe``). Submitting a job with an ``owner`` cancels that owner's
previous job, so a new Ctrl+K replaces the old run instead of queueing behind it.

The model is loaded on the worker thread too, so ``import torch`` never blocks the caller.
On Linux the thread (and the threads torch starts from it for a pass) runs a little below the
caller's priority, so typing and painting come first when both want a core (``yield_to_caller``).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sfumato.model.api import Backend, CancelFlag, Cancelled, Draft, InfillRequest, TemplateRequest
from sfumato.model.gap_fill import in_groups

DraftCallback = Callable[[tuple[Draft, ...]], None]
DoneCallback = Callable[[tuple[Draft, ...]], None]
ErrorCallback = Callable[[BaseException], None]


NICER_BY = 4  # the caller's thread weighs 1024 against the worker's 423: about 70% of a shared core

# Typing in a 40 MB file while the resting cursor's prompt was read and a suggestion denoised, the GUI
# thread's longest stall (``bench_probe typing``, 2 cores, the engine on both) was 17.4 and 17.6 ms
# at the same priority, 14.7 and 14.5 ms at +4, 13.2 and 12.8 ms at +10 (session 51). A pass's
# threads kept both cores while the GUI thread's key and paint waited for one. With nothing else
# running, a lower priority costs a pass nothing; +4 rather than +10 so that a pass beside another
# program's work (a build) is not starved where the kernel does not group a session's threads.


def yield_to_caller() -> None:
    """Lower the calling thread's priority by ``NICER_BY`` (Linux only: elsewhere a thread's nice
    value cannot be set on its own). Threads it starts later, torch's for a pass, inherit it."""
    if sys.platform != "linux":
        return
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + NICER_BY))
    except OSError:  # a sandbox that forbids it: the same priority as before
        pass


@dataclass
class Job:
    work: tuple[InfillRequest, ...] | TemplateRequest  # requests denoised together, or one template
    on_draft: DraftCallback
    on_done: DoneCallback
    on_error: ErrorCallback
    on_cancelled: Callable[[], None] | None = None
    owner: object = None
    cancel_flag: CancelFlag = field(default_factory=CancelFlag)
    warm_only: bool = False  # read the prompt into the backend's cache; no drafts, no callbacks

    def cancel(self) -> None:
        self.cancel_flag.set()

    @property
    def cancelled(self) -> bool:
        return self.cancel_flag.is_set()


class InferenceWorker:
    """Loads a backend with ``load`` on its own thread, then serves jobs until ``stop``."""

    def __init__(
        self,
        load: Callable[[], Backend],
        on_loaded: Callable[[Backend], None] | None = None,
        on_load_error: Callable[[BaseException], None] | None = None,
    ):
        self._load = load
        self._on_loaded = on_loaded
        self._on_load_error = on_load_error
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._latest: dict[int, Job] = {}
        self._warming: Job | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="sfumato-inference", daemon=True)
        self.backend: Backend | None = None
        self.load_error: BaseException | None = None
        self.loaded = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def submit(
        self,
        work: Sequence[InfillRequest] | TemplateRequest,
        on_draft: DraftCallback,
        on_done: DoneCallback,
        on_error: ErrorCallback,
        on_cancelled: Callable[[], None] | None = None,
        owner: object = None,
    ) -> Job:
        work = work if isinstance(work, TemplateRequest) else tuple(work)
        job = Job(work, on_draft, on_done, on_error, on_cancelled, owner)
        with self._lock:
            if self._warming is not None:  # a real request never waits for a guess at one
                self._warming.cancel()
            if owner is not None:
                previous = self._latest.get(id(owner))
                if previous is not None:
                    previous.cancel()
                self._latest[id(owner)] = job
        self._jobs.put(job)
        return job

    def warm(self, request: InfillRequest) -> None:
        """Let the backend read ``request``'s prompt ahead of time (the cursor rests where Ctrl+K
        may come), when it can (``backend.warm``). The next job, or the next warm, cancels it."""
        if self.backend is None or not hasattr(self.backend, "warm"):
            return
        ignore = lambda *_: None  # noqa: E731
        job = Job((request,), ignore, ignore, ignore, warm_only=True)
        with self._lock:
            if self._warming is not None:
                self._warming.cancel()
            self._warming = job
        self._jobs.put(job)

    def stop(self, timeout: float | None = 5.0) -> None:
        with self._lock:
            for job in [*self._latest.values(), *([self._warming] if self._warming else [])]:
                job.cancel()
        self._jobs.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        yield_to_caller()
        try:
            self.backend = self._load()
        except BaseException as error:  # noqa: BLE001 - any load failure is reported, never raised here
            self.load_error = error
        self.loaded.set()
        if self.load_error is not None:
            if self._on_load_error:
                self._on_load_error(self.load_error)
        elif self._on_loaded:
            self._on_loaded(self.backend)
        while (job := self._jobs.get()) is not None:
            if self.load_error is not None:
                job.on_error(self.load_error)
            else:
                self._serve(job)

    def _serve(self, job: Job) -> None:
        if job.warm_only:
            self._warm(job)
            return
        if job.cancelled:
            self._report_cancelled(job)
            return
        last: tuple[Draft, ...] | None = None
        try:
            if isinstance(job.work, TemplateRequest):
                stream = self.backend.stream_template(job.work, job.cancel_flag)
            else:  # many regions (a cursor each) run a group at a time, as a template's gaps do
                stream = in_groups(self.backend.stream, len(job.work), job.work.__getitem__, job.cancel_flag)
            for drafts in stream:
                last = drafts
                if all(draft.final for draft in drafts):
                    break
                job.on_draft(drafts)
        except Cancelled:
            self._report_cancelled(job)
            return
        except Exception as error:  # noqa: BLE001 - the worker must survive any model failure
            job.on_error(error)
            return
        finally:
            with self._lock:
                if self._latest.get(id(job.owner)) is job:
                    del self._latest[id(job.owner)]
        if job.cancelled:
            self._report_cancelled(job)
        elif last is None:
            job.on_error(RuntimeError("the model produced no result"))
        else:
            job.on_done(last)

    def _warm(self, job: Job) -> None:
        try:
            if not job.cancelled:
                self.backend.warm(job.work[0], job.cancel_flag)
        except Exception:  # noqa: BLE001 - a guess that failed costs nothing; the real request will say
            pass
        finally:
            with self._lock:
                if self._warming is job:
                    self._warming = None

    @staticmethod
    def _report_cancelled(job: Job) -> None:
        if job.on_cancelled:
            job.on_cancelled()
