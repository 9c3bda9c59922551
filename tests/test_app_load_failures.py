"""What the window says when its model does not load: a line in the status bar and the same line
on stderr, for a window started from a terminal (issue 24, item 4)."""

from __future__ import annotations

from test_app_support import qasync_loop, window  # noqa: F401 - fixtures

from sfumato.model.api import EngineError


def test_a_model_that_does_not_load_says_why_in_the_status_bar_and_on_stderr(window, qtbot, capsys):
    def load():
        raise EngineError("embedded model: cannot load it (the peft package is missing; pip install peft)")

    window.ai.worker.start(load, "embedded")
    qtbot.waitUntil(lambda: window.ai.worker.error is not None, timeout=5000)
    assert "pip install peft" in window.statusBar().currentMessage()
    assert capsys.readouterr().err == "sfumato: no model: embedded model: cannot load it (the peft package is missing; pip install peft)\n"
