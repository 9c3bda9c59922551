"""The desktop application's entry point: ``run(files, model_spec, device, quantize)``."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import NoReturn

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication


def run(files: list[str], model_spec: str | None = None, device: str | None = None, quantize: str | None = None) -> NoReturn:
    """Open a window with ``files`` (or an untitled document), run until it closes, then end the process.

    ``model_spec``, ``device`` and ``quantize`` (None: Settings') hold for this run only."""
    import qasync

    from sfumato.app.about import app_icon
    from sfumato.app.mainwindow import MainWindow, first_show, open_files
    from sfumato.app.recovery import attach
    from sfumato.app.ui_thread_gc import UiThreadCollector

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Sfumato")
    app.setOrganizationName("Sfumato")
    app.setWindowIcon(app_icon())
    UiThreadCollector(app).start()  # before the inference thread is started
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    window = MainWindow(loop, QSettings(), model_spec, device, quantize)
    first_show(window)  # before the files: a large one fills in under a status line counting the share read
    open_files(window, files)
    attach(window)  # hot exit: copies of unsaved documents, offered back after a crash
    with loop:
        loop.run_until_complete(closed.wait())
    _exit_at_once(0)


def _exit_at_once(code: int) -> NoReturn:
    """End the process now: the window is closed, settings and recovery copies are written. The
    interpreter's teardown of torch, transformers and Qt would keep it alive for seconds more."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
