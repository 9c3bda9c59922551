"""The window's side of issue 16: precision in Settings and the status bar, load progress, cancelling a load."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from PySide6.QtCore import QSettings, Qt

from test_app_support import qasync_loop  # noqa: F401 - fixture

from sfumato.app.mainwindow import MainWindow
from sfumato.app.worker_adapter import model_label
from sfumato.model.api import Cancelled, ModelInfo


@pytest.fixture
def make_window(qtbot, qasync_loop, tmp_path):  # noqa: F811
    windows = []

    def make(settings: dict | None = None, **overrides) -> MainWindow:
        store = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
        for key, value in (settings or {}).items():
            store.setValue(key, value)
        window = MainWindow(qasync_loop, store, **overrides)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.ai.worker.stop()
        for document in window.tabs.documents():  # no "save changes?" prompt when the test closes it
            document.editor.document().setModified(False)
        window.close()
        window.deleteLater()


def test_loading_shows_tensors_read_and_the_cancel_button_stops_it(make_window, qtbot):
    window = make_window()
    seen_cancel = []

    def loader(progress, cancel):
        progress(0, 10)
        progress(5, 10)
        deadline = time.monotonic() + 10
        while not cancel.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen_cancel.append(cancel.is_set())
        raise Cancelled()

    window.ai.worker.start_loading(loader, "slow")
    bar = window.ai.load_progress
    qtbot.waitUntil(lambda: (bar.maximum(), bar.value()) == (10, 5), timeout=10000)
    assert window.ai.cancel_load.isVisible() and "5 of 10 tensors" in bar.toolTip()
    qtbot.mouseClick(window.ai.cancel_load, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: seen_cancel == [True], timeout=10000)
    assert window.ai.model_label.text() == "No model" and "cancelled" in window.ai.worker.error
    assert not window.ai.cancel_load.isVisible() and not bar.isVisible()
    editor = window.tabs.new_document().editor
    qtbot.keyClicks(editor, "still editing")
    assert editor.toPlainText() == "still editing"


def test_the_status_bar_names_device_precision_and_memory_of_an_int8_model(make_window, qtbot, tiny_model_dir):
    window = make_window({"model_spec": str(tiny_model_dir), "device": "cpu", "quantize": "int8"})
    window.ai.start_engine()
    qtbot.waitUntil(lambda: window.ai.worker.info is not None or window.ai.worker.error is not None, timeout=60000)
    assert window.ai.worker.error is None
    name, device, precision, memory = window.ai.model_label.text().split(" · ")
    assert (name, device, precision) == (tiny_model_dir.name, "cpu", "int8 (float32)")
    assert memory.endswith(" MB") and 0 < float(memory.removesuffix(" MB")) < 2.6  # float32: 2.6 MB


def test_a_command_line_precision_is_for_this_run_only(make_window, qtbot, tiny_model_dir, tmp_path):
    window = make_window({"model_spec": str(tiny_model_dir)}, device="cpu", quantize="nf4")
    window.ai.start_engine()
    qtbot.waitUntil(lambda: window.ai.worker.error is not None, timeout=60000)
    assert "--quantize nf4 needs a CUDA GPU" in window.ai.worker.error
    window.save_settings()
    assert QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat).value("quantize") == "auto"


def test_the_settings_dialog_keeps_the_precision(make_window):
    from sfumato.app.settings_dialog import SettingsDialog

    window = make_window({"quantize": "int8"})
    dialog = SettingsDialog(window.settings, window)
    assert dialog.quantize.currentData() == "int8"
    dialog.quantize.setCurrentIndex(dialog.quantize.findData("int4"))
    assert dialog.result_settings().quantize == "int4"


def test_the_status_bar_label_keeps_a_long_precision_to_its_first_clause():
    """The embedded model's precision is a sentence; the label beside the cursor position takes its
    first clause, so the status message on its left is not cut off (the whole is in the tooltip)."""
    info = ModelInfo("sfumato-lm", "lm-denoiser", "cpu", 0, False, precision="bfloat16 layers, float32 output layer",
                     memory_bytes=325_700_000)
    assert model_label(info) == "sfumato-lm · cpu · bfloat16 layers · 325.7 MB"
    assert model_label(replace(info, precision="int8 (float32)")) == "sfumato-lm · cpu · int8 (float32) · 325.7 MB"
