"""GUI soak: many infill sessions in one editor window, each accepted or rejected at random.

    python -m sfumato.app.soak_gui --model FOLDER --n 200 [--seed 0] [--tokens 64]

The real window, engine, worker thread and model run (offscreen unless a display is set). Every
session is a rewrite of a random selection, an infill at a random cursor, or a gap fill of a
``[MASK]`` the script types. Some are rejected or interrupted while the model runs, some have text
typed before them mid-run; the rest are accepted or rejected once ready. After each one the
rules that protect the user's text (docs/architecture.md) are checked: reject and interruption
leave the text as it was; accept is one undo step (undo gives back the text before, redo the result); nothing a
session does reaches the text that saving sees. Prints one JSON line; exit code 1 on any breach.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import replace

TIMEOUT_S = 120.0
SAMPLE = (
    "def area(width, height):\n    return width * height\n\n"
    "class Shape:\n    def __init__(self, name):\n        self.name = name\n\n"
    "# Notes: café, 中文, tabs\there.\nprint(area(3, 4))\n"
)


def wait(condition, timeout: float = TIMEOUT_S) -> bool:
    """Run the event loop until ``condition()`` or ``timeout`` seconds."""
    from PySide6.QtWidgets import QApplication

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        QApplication.processEvents()
        time.sleep(0.001)
    return True


class Soak:
    def __init__(self, window, rng: random.Random):
        self.window = window
        self.rng = rng
        self.counts = {"accepted": 0, "rejected": 0, "interrupted": 0, "failed": 0, "empty": 0, "typed_before": 0, "gap_fills": 0}
        self.breaches: list[str] = []

    @property
    def editor(self):
        return self.window.tabs.current_editor()

    def text(self) -> str:
        from sfumato.app.textpositions import document_text

        return document_text(self.editor.document())

    def same(self, actual: str, expected: str, what: str, index: int) -> None:
        """A breach when the texts differ, showing where they first do."""
        if actual != expected:
            at = next((i for i, (a, b) in enumerate(zip(actual, expected)) if a != b), min(len(actual), len(expected)))
            around = slice(max(0, at - 20), at + 20)
            self.breaches.append(f"session {index}: {what} (at {at}: {actual[around]!r} != {expected[around]!r})")

    def start(self, index: int):
        """Start one session of a random kind; the session, or None when none could start."""
        from PySide6.QtGui import QTextCursor

        from sfumato.app.textpositions import position_of

        editor, text = self.editor, self.text()
        kind = self.rng.choice(["rewrite", "infill", "gap"])
        cursor = editor.textCursor()
        if kind == "gap":
            cursor.setPosition(position_of(text, self.rng.randint(0, len(text))))
            cursor.insertText(self.rng.choice(["[MASK]", "[MASK:3]"]))
            self.counts["gap_fills"] += 1
            self.window.ai.fill_gaps()
        else:
            start = self.rng.randint(0, len(text))  # whole characters, as a user selects
            end = min(len(text), start + (self.rng.randint(1, 40) if kind == "rewrite" else 0))
            cursor.setPosition(position_of(text, start))
            cursor.setPosition(position_of(text, end), QTextCursor.MoveMode.KeepAnchor)
            editor.setTextCursor(cursor)
            self.window.ai.starter.rewrite(editor, strength=self.rng.uniform(0.3, 1.0))
        return editor.session

    def run_one(self, index: int) -> None:
        editor = self.editor
        session = self.start(index)
        if session is None:
            self.breaches.append(f"session {index}: did not start ({self.window.statusBar().currentMessage()})")
            return
        before = session.text_without_draft()  # a gap fill typed its marker first
        outcomes = []
        session.ended.connect(lambda outcome, message: outcomes.append(outcome))
        roll = self.rng.random()
        if roll < 0.15:  # interrupt while the model runs
            wait(lambda: session.has_draft or session.state != "running", 10.0)
            session.reject()
            self.counts["interrupted"] += 1
            self.same(self.text(), before, "an interrupted session changed the text", index)
            return
        if roll < 0.3:  # type above the region while it denoises
            wait(lambda: session.has_draft or session.state != "running", 10.0)
            if session.state != "ended":
                cursor = editor.textCursor()
                cursor.setPosition(0)
                editor.setTextCursor(cursor)
                with session.user_edit():
                    editor.textCursor().insertText("#\n")
                before = "#\n" + before
                self.counts["typed_before"] += 1
        if not wait(lambda: session.state in ("ready", "ended")):
            self.breaches.append(f"session {index}: no result within {TIMEOUT_S:.0f} s")
            session.reject()
            return
        self.same(editor.saved_text(), before, "saving would see a draft", index)
        if session.state == "ended":
            self.counts[outcomes[0] if outcomes == ["empty"] else "failed"] += 1
            self.same(self.text(), before, f"a {outcomes} session changed the text", index)
            return
        if self.rng.random() < 0.5:
            session.reject()
            self.counts["rejected"] += 1
            self.same(self.text(), before, "reject changed the text", index)
            return
        session.accept()
        self.counts["accepted"] += 1
        after = self.text()
        editor.undo()
        self.same(self.text(), before, "undo after accept did not restore the text", index)
        editor.redo()
        self.same(self.text(), after, "redo after undo did not bring the result back", index)
        if self.rng.random() < 0.5:  # keep the document from drifting far from the sample
            editor.undo()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded", help="model spec (a folder, or embedded)")
    parser.add_argument("--n", type=int, default=200, help="sessions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per infill and per gap")
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    import qasync
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from sfumato.app.mainwindow import MainWindow
    from sfumato.app.ui_thread_gc import UiThreadCollector
    from sfumato.model.soak import resident_mb

    app = QApplication.instance() or QApplication(sys.argv[:1])
    UiThreadCollector(app).start()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as folder:
        window = MainWindow(loop, QSettings(os.path.join(folder, "settings.ini"), QSettings.Format.IniFormat), args.model)
        window.show()
        window.ai.starter.options = replace(window.ai.starter.options, max_new_tokens=args.tokens, gap_tokens=args.tokens)
        window.ai.start_engine()
        if not wait(lambda: window.ai.worker.info is not None or window.ai.worker.error is not None):
            print(json.dumps({"error": "the model did not load"}))
            return 1
        if window.ai.worker.error is not None:
            print(json.dumps({"error": window.ai.worker.error}))
            return 1
        document = window.tabs.new_document()
        document.editor.setPlainText(SAMPLE)
        soak = Soak(window, random.Random(args.seed))
        began, start_mb = time.perf_counter(), resident_mb()
        for index in range(args.n):
            soak.run_one(index)
        end_mb = resident_mb()
        report = {
            "sessions": args.n,
            **soak.counts,
            "breaches": soak.breaches,
            "rss_start_mb": round(start_mb, 1),
            "rss_end_mb": round(end_mb, 1),
            "seconds": round(time.perf_counter() - began, 1),
        }
        print(json.dumps(report))
        document.editor.document().setModified(False)
        window.ai.worker.stop()
        window.close()
    return 1 if soak.breaches else 0


if __name__ == "__main__":
    sys.exit(main())
