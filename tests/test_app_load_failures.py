"""What the window says when its model, or an optional part of the model, does not load: a line
in the status bar and the same line on stderr, for a window started from a terminal (issue 24, item 4)."""

from __future__ import annotations

import threading

from test_app_support import FakeBackend, qasync_loop, window, with_fake_model  # noqa: F401 - fixtures

from sfumato.model.api import EngineError

PROSE_FAILURE = "the prose model (/x/model.gguf) did not load: the gguf package is missing; pip install gguf"


class WithAFailingPart(FakeBackend):
    """A model that loads, one of whose optional parts fails afterwards, on a thread of its own."""

    def watch_optional(self, report) -> None:
        threading.Timer(0.05, report, args=(PROSE_FAILURE,)).start()


def test_an_optional_part_that_does_not_load_says_so_in_the_status_bar_and_on_stderr(window, qtbot, capsys):
    with_fake_model(window, qtbot, WithAFailingPart())
    expected = PROSE_FAILURE[0].upper() + PROSE_FAILURE[1:]
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == expected, timeout=5000)
    assert capsys.readouterr().err == f"sfumato: {PROSE_FAILURE}\n"
    assert window.ai.model_label.text().startswith("fake") and expected in window.ai.model_label.toolTip()
    assert window.ai.worker.info is not None and window.ai.worker.error is None, "the model itself is in use"


def test_a_model_that_does_not_load_says_why_in_the_status_bar_and_on_stderr(window, qtbot, capsys):
    def load():
        raise EngineError("embedded model: cannot load it (the peft package is missing; pip install peft)")

    window.ai.worker.start(load, "embedded")
    qtbot.waitUntil(lambda: window.ai.worker.error is not None, timeout=5000)
    assert "pip install peft" in window.statusBar().currentMessage()
    assert capsys.readouterr().err == "sfumato: no model: embedded model: cannot load it (the peft package is missing; pip install peft)\n"


def test_news_of_a_replaced_model_s_part_is_dropped(window, qtbot, capsys):
    slow = threading.Event()

    class LateFailure(FakeBackend):
        def watch_optional(self, report) -> None:
            threading.Thread(target=lambda: (slow.wait(5), report(PROSE_FAILURE))).start()

    with_fake_model(window, qtbot, LateFailure())
    with_fake_model(window, qtbot)  # another model replaces it before its part fails
    slow.set()
    qtbot.wait(200)
    assert "prose model" not in window.statusBar().currentMessage() and capsys.readouterr().err == ""
