"""The inference worker: loads off the caller's thread, serves jobs, cancels, survives failures."""

import os
import sys
import threading

import pytest

from sfumato.model.api import EngineError, InfillRequest
from sfumato.model.worker import NICER_BY, InferenceWorker


class Recorder:
    def __init__(self):
        self.drafts, self.done, self.errors, self.cancelled = [], [], [], 0
        self.finished = threading.Event()

    def submit(self, worker, request, owner=None):
        return worker.submit(
            [request], self.drafts.append, self._done, self._error, self._cancelled, owner=owner
        )

    def _done(self, drafts):
        self.done.append(drafts)
        self.finished.set()

    def _error(self, error):
        self.errors.append(error)
        self.finished.set()

    def _cancelled(self):
        self.cancelled += 1
        self.finished.set()


def test_worker_loads_on_its_own_thread_and_serves(tiny_backend):
    threads = []

    def load():
        threads.append(threading.current_thread())
        return tiny_backend

    worker = InferenceWorker(load)
    worker.start()
    recorder = Recorder()
    recorder.submit(worker, InfillRequest(prefix="x", max_new_tokens=8, seed=1))
    assert recorder.finished.wait(60)
    worker.stop()
    assert threads[0] is not threading.main_thread()
    assert recorder.done and recorder.done[0][0].final and not recorder.errors


def nice_of_this_thread() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority is Linux's")
def test_the_worker_runs_below_the_callers_priority_and_threads_it_starts_follow():
    seen = {}

    def load():
        seen["worker"] = nice_of_this_thread()
        helper = threading.Thread(target=lambda: seen.update(started=nice_of_this_thread()))
        helper.start()
        helper.join()
        return object()

    worker = InferenceWorker(load)
    worker.start()
    assert worker.loaded.wait(30)
    worker.stop()
    caller = nice_of_this_thread()
    assert seen["worker"] == min(19, caller + NICER_BY)
    assert seen["started"] == seen["worker"]  # as torch's threads for a pass, started from it
    assert nice_of_this_thread() == caller  # the caller's own priority is untouched


def test_new_job_of_the_same_owner_cancels_the_old_one(tiny_backend):
    gate = threading.Event()

    def load():
        gate.wait(30)  # hold the queue until both jobs are in
        return tiny_backend

    worker = InferenceWorker(load)
    worker.start()
    old, new = Recorder(), Recorder()
    editor = object()
    old.submit(worker, InfillRequest(prefix="a", max_new_tokens=8), owner=editor)
    new.submit(worker, InfillRequest(prefix="b", max_new_tokens=8), owner=editor)
    gate.set()
    assert new.finished.wait(60) and old.finished.wait(60)
    worker.stop()
    assert old.cancelled == 1 and not old.done
    assert new.done


def test_failing_model_reports_and_the_next_job_works(tiny_backend, monkeypatch):
    worker = InferenceWorker(lambda: tiny_backend)
    worker.start()
    calls = {"n": 0}
    original = tiny_backend.model.forward

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom")
        return original(*args, **kwargs)

    monkeypatch.setattr(tiny_backend.model, "forward", flaky)
    first, second = Recorder(), Recorder()
    first.submit(worker, InfillRequest(prefix="a", max_new_tokens=8, steps=4))
    assert first.finished.wait(60)
    second.submit(worker, InfillRequest(prefix="a", max_new_tokens=8, steps=4))
    assert second.finished.wait(60)
    worker.stop()
    assert "boom" in str(first.errors[0]) and second.done


def test_load_failure_fails_every_job_with_its_message():
    def load():
        raise EngineError("the embedded model is not installed")

    worker = InferenceWorker(load)
    worker.start()
    recorder = Recorder()
    recorder.submit(worker, InfillRequest(prefix="a"))
    assert recorder.finished.wait(10)
    worker.stop()
    assert "not installed" in str(recorder.errors[0]) and "not installed" in str(worker.load_error)


def test_template_jobs_go_to_stream_template(tiny_backend):
    from sfumato.model.api import TemplateRequest

    worker = InferenceWorker(lambda: tiny_backend)
    worker.start()
    recorder = Recorder()
    template = TemplateRequest(("a = ", "\nb = ", "\n"), (3, 3), seed=0)
    worker.submit(template, recorder.drafts.append, recorder._done, recorder._error, recorder._cancelled)
    assert recorder.finished.wait(60)
    worker.stop()
    assert len(recorder.done[0]) == 2  # one draft per gap


def test_an_edit_of_many_regions_runs_a_group_at_a_time_and_answers_every_region(tiny_backend):
    """One region a cursor: 2,000 cursors in one batch took 8 GB of the embedded model's memory."""
    from sfumato.model.gap_fill import REQUESTS_AT_ONCE

    batches = []

    class Counting:
        info = tiny_backend.info

        def stream(self, requests, cancel=None):
            batches.append(len(requests))
            return tiny_backend.stream(requests, cancel)

    worker = InferenceWorker(Counting)
    worker.start()
    recorder = Recorder()
    requests = [InfillRequest(prefix=f"x{i} = ", max_new_tokens=3, seed=i) for i in range(2 * REQUESTS_AT_ONCE + 3)]
    worker.submit(requests, recorder.drafts.append, recorder._done, recorder._error, recorder._cancelled)
    assert recorder.finished.wait(120)
    worker.stop()
    assert batches == [REQUESTS_AT_ONCE, REQUESTS_AT_ONCE, 3]
    assert not recorder.errors and len(recorder.done[0]) == len(requests) and all(d.final for d in recorder.done[0])
    assert all(len(drafts) == len(requests) for drafts in recorder.drafts)


def test_a_warm_yields_to_the_next_request_and_is_skipped_by_backends_without_warm():
    import threading

    from sfumato.model.api import CancelFlag, InfillRequest
    from sfumato.model.worker import InferenceWorker

    started, release, seen = threading.Event(), threading.Event(), []

    class Warmable:
        def warm(self, request, cancel: CancelFlag):
            started.set()
            release.wait(5)
            seen.append(("warm", cancel.is_set()))

        def stream(self, requests, cancel=None):
            seen.append(("stream", None))
            from sfumato.model.api import Candidate, Draft

            yield (Draft(1, (Candidate("x", ()),), final=True),)

    worker = InferenceWorker(lambda: Warmable())
    worker.start()
    worker.loaded.wait(5)
    worker.warm(InfillRequest(prefix="a"))
    assert started.wait(5)
    done = threading.Event()
    worker.submit([InfillRequest(prefix="a")], lambda d: None, lambda d: done.set(), lambda e: done.set())
    release.set()
    assert done.wait(5)
    worker.stop()
    assert seen == [("warm", True), ("stream", None)]  # the real request cancelled the warm

    plain = InferenceWorker(lambda: object())
    plain.start()
    plain.loaded.wait(5)
    plain.warm(InfillRequest(prefix="a"))  # no warm method: nothing is queued, nothing fails
    assert plain._jobs.empty()
    plain.stop()
