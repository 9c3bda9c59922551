"""The check of issue 24, with real key presses in the real window under a virtual X display.

    python packaging/review_check.py [--model SPEC] [--out DIR]

With a fresh configuration (a temporary XDG_CONFIG_HOME) and copies of two files it checks, typing
every key with ``xdotool`` (through ``openbox`` when there is one):

- the welcome of a start without files names the loaded model, not "loading…", on screen (item 3);
- a rewrite of one long Markdown line (word wrap off, Alt+Z) keeps the document's line count on every
  draft, and its result and Esc leave the view scrolled to the line's start (item 1);
- a selection down to column 0 of the next line leaves that line a line of its own (item 1);
- a multi-line rewrite of code is reviewed as a diff (ghost lines), Alt+D shows it clean and back,
  Ctrl+S during the review writes the user's text only, Alt+] three times, a scroll away, Esc: the
  text is the user's again and Ctrl+S leaves the file byte-identical (items 7 and 2);
- a line with a typo, rewritten at 30% (the strength box's slider moved with Page Down), comes
  back fixed, and Tab keeps the fix in the file (issue 22's fixes);
- nothing on stderr names ``QTextCursor`` or holds a traceback (stderr is captured at the file descriptor, so Qt's own
  warnings are caught; a marker warning at the start proves the capture works).

Saves a screenshot of the window at each step and the captured stderr (``stderr.txt``) in DIR
(default ``build/review-check``), prints one
line per check and exits 1 when one fails. Use the embedded model (the default; about a minute a
rewrite on a busy 2-core machine). Needs ``apt-get install -y xvfb libxcb-icccm4
libxcb-keysyms1 xdotool openbox`` (Xvfb is started here when there is no DISPLAY).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from screenshots import REPO, SAMPLE, start_display  # packaging/ is this script's folder

sys.path.insert(0, str(REPO))  # this checkout's app, whatever the environment has installed

LONG_LINE = ("Sfumato rewrites a selection in place: the text dissolves into noise and settles, pass by pass, "
             "into new text, while the rest of the editor stays usable, and a long line like this one runs "
             "far past the right edge of the window so that the view must scroll sideways to reach its end.")
NEXT_LINE = "This line stays a line of its own."
NOTES = f"# Notes\n\n{LONG_LINE}\n{NEXT_LINE}\n\nThe end.\n"
TYPO = "def total(values):\n    result = sum(values)\n    retrun result\n"
MARKER = "review_check: stderr is captured"
WARNING = "QTextCursor"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="model spec: embedded, a folder or a hub id")
    parser.add_argument("--out", default=str(REPO / "build" / "review-check"), help="where the screenshots go")
    args = parser.parse_args()
    if shutil.which("xdotool") is None:
        sys.exit("review_check: xdotool is needed to type the keys (apt-get install -y xdotool)")
    server = start_display()
    manager = subprocess.Popen(["openbox"], stderr=subprocess.DEVNULL) if shutil.which("openbox") else None
    home = Path(tempfile.mkdtemp(prefix="sfumato-review-"))
    os.environ["XDG_CONFIG_HOME"] = str(home / "config")  # a fresh configuration
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    (home / "notes.md").write_text(NOTES)
    shutil.copy(SAMPLE, home / "inventory.py")
    (home / "total.py").write_text(TYPO)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    captured = open(out / "stderr.txt", "w+b")  # kept: it holds a crash's last words too
    terminal = os.dup(2)
    os.dup2(captured.fileno(), 2)  # Qt writes its warnings to file descriptor 2
    try:
        results = check(args.model, home, out)
    finally:
        os.dup2(terminal, 2)
        for process in (manager, server):
            if process is not None:
                process.terminate()
        shutil.rmtree(home, ignore_errors=True)
    captured.seek(0)
    stderr = captured.read().decode("utf-8", "replace")
    captured.close()
    sys.stderr.write(stderr.replace(MARKER + "\n", ""))
    results["stderr capture works (a marker warning was caught)"] = MARKER in stderr
    results[f"no {WARNING} warning on stderr"] = WARNING not in stderr
    results["no Python traceback on stderr (an exception in a slot)"] = "Traceback" not in stderr
    for name, ok in results.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    failed = [name for name, ok in results.items() if not ok]
    print("check: " + ("passed" if not failed else f"FAILED ({len(failed)})"), flush=True)
    return 1 if failed else 0


async def keys(*names: str) -> None:
    """Type each of ``names`` (xdotool key names, e.g. ctrl+k) and let the window take it."""
    for name in names:
        subprocess.run(["xdotool", "key", "--clearmodifiers", name], check=True)
        await asyncio.sleep(0.12)


async def until(condition, timeout: float = 600.0, what: str = "") -> bool:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            print(f"timed out waiting for {what}", flush=True)
            return False
        await asyncio.sleep(0.01)
    return True


def check(model: str, home: Path, out: Path) -> dict[str, bool]:
    import qasync
    from PySide6.QtCore import QSettings, qWarning
    from PySide6.QtWidgets import QApplication

    qWarning(MARKER)
    from sfumato.app.ui_thread_gc import UiThreadCollector

    app = QApplication(sys.argv[:1])
    UiThreadCollector(app).start()
    app.setApplicationName("Sfumato")
    app.setOrganizationName("Sfumato")
    app.setCursorFlashTime(0)  # a blinking cursor would change the screen by itself
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    from sfumato.app.mainwindow import MainWindow, first_show, open_files

    window = MainWindow(loop, QSettings(), model_spec=model)
    window.settings.alternatives = 2  # Alt+] three times: the second, the original, the first again
    window.apply_settings()
    window.resize(1100, 520)  # the sample does not fit: a scroll away from a region is possible
    open_files(window, [])
    first_show(window)
    results: dict[str, bool] = {}

    def screen_image(widget):
        corner = widget.mapToGlobal(widget.rect().topLeft())
        return window.windowHandle().screen().grabWindow(0, corner.x(), corner.y(), widget.width(), widget.height())

    def shot(name: str) -> None:
        app.processEvents()
        screen_image(window).save(str(out / name))
        print(f"wrote {out / name}", flush=True)

    async def scenario() -> None:
        await until(lambda: window.windowHandle() is not None and window.windowHandle().isExposed(), what="the window")
        await asyncio.sleep(0.3)
        welcome = window.tabs.current_editor()
        loading = window.ai.worker.loading or window.ai.worker.info is None
        before = screen_image(welcome.viewport()).toImage()
        shot("welcome-loading.png")
        await until(lambda: window.ai.worker.info is not None or window.ai.worker.error is not None, what="the model")
        if window.ai.worker.info is None:
            print(f"no model: {window.ai.worker.error}", flush=True)
            results["model loaded"] = False
            return
        await asyncio.sleep(0.5)
        shot("welcome-loaded.png")
        text = welcome.placeholderText()
        results["welcome names the loaded model, not loading"] = "loading" not in text and window.ai.worker.info.name in text
        if loading:
            results["welcome redrawn on screen once the model loaded"] = screen_image(welcome.viewport()).toImage() != before
        await long_line(window, home / "notes.md", results, shot)
        await code_review(window, home / "inventory.py", results, shot)
        await typo_fix(window, home / "total.py", results, shot)

    with loop:
        loop.run_until_complete(scenario())
    for document in window.tabs.documents():
        document.editor.document().setModified(False)
    window.close()
    return results


async def rewrite(editor, *select: str, strength_keys: tuple[str, ...] = ()):
    """Select with ``select`` keys, Ctrl+K, ``strength_keys`` on the strength box's slider, Enter:
    the session, once started."""
    from sfumato.app.inlinebox import InlineBox

    await keys(*select, "ctrl+k")
    await until(lambda: editor.viewport().findChild(InlineBox) is not None, 10, "the strength box")
    await keys(*strength_keys, "Return")
    await until(lambda: editor.session is not None, 10, "the session")
    return editor.session


async def long_line(window, path: Path, results: dict[str, bool], shot) -> None:
    """Item 1: a long Markdown line rewritten with word wrap off, then lines down to column 0."""
    from PySide6.QtWidgets import QPlainTextEdit

    editor = window.tabs.open_path(str(path)).editor
    editor.setFocus()
    await asyncio.sleep(0.3)
    await keys("alt+z")  # word wrap off for Markdown: the view can scroll sideways
    results["Alt+Z turned word wrap off"] = editor.lineWrapMode() == QPlainTextEdit.LineWrapMode.NoWrap
    bar, lines = editor.horizontalScrollBar(), editor.blockCount()
    await keys("ctrl+Home", "Down", "Down", "Home", "shift+End")
    results["selecting to the line's end scrolled the view sideways"] = bar.value() > 0  # before Ctrl+K puts its start in view
    session = await rewrite(editor)
    counts = set()
    while session.state == "running":
        counts.add(editor.blockCount())
        await asyncio.sleep(0.005)
    shot("long-line-review.png")
    results["long line: every draft kept the line count"] = counts <= {lines}
    results["long line: the result is shown from the line's start"] = session.state == "ready" and bar.value() == 0
    await keys("Escape")
    await until(lambda: editor.session is None, 10, "Esc")
    results["long line: Esc restores the text, view at the start"] = editor.toPlainText() == NOTES and bar.value() == 0
    shot("long-line-after-esc.png")

    session = await rewrite(editor, "ctrl+Home", "Down", "Down", "Home", "shift+Down")
    await until(lambda: session.state != "running", what="the result")
    shot("column-0-review.png")
    blocks = editor.toPlainText().split("\n")
    results["column 0: the next line stays a line of its own"] = session.state == "ready" and NEXT_LINE in blocks
    await keys("Escape")
    await until(lambda: editor.session is None, 10, "Esc")
    results["column 0: Esc restores the text"] = editor.toPlainText() == NOTES


async def code_review(window, path: Path, results: dict[str, bool], shot) -> None:
    """Items 7 and 2: a multi-line rewrite reviewed as a diff, Alt+D, Ctrl+S, Alt+] x3, a scroll, Esc."""
    editor = window.tabs.open_path(str(path)).editor
    editor.setFocus()
    await asyncio.sleep(0.3)
    await keys("ctrl+End")
    subprocess.run(["xdotool", "type", "--delay", "40", "# checked"], check=True)  # an unsaved edit
    await keys("Return")
    users = path.read_text() + "# checked\n"
    results["typed text is in the editor"] = editor.toPlainText() == users
    if editor.toPlainText() != users:
        print(f"typed: {editor.toPlainText()[-40:]!r}", flush=True)
    # the body of report(): lines 25-28, at the foot of the view
    session = await rewrite(editor, "ctrl+Home", *["Down"] * 24, "Home", *["shift+Down"] * 3, "shift+End")
    await until(lambda: session.state != "running", what="the result")
    ghosts = lambda: editor.document().documentLayout().ghosts  # noqa: E731 - the ghosts drawn now
    shot("code-review-diff.png")
    results["diff: the result is reviewed with ghost lines"] = session.state == "ready" and session.showing_diff and bool(ghosts())
    await keys("ctrl+s")
    await asyncio.sleep(0.5)
    results["diff: Ctrl+S during the review writes the user's text, no draft, no diff"] = path.read_bytes() == users.encode()
    await keys("alt+d")
    shot("code-review-clean.png")
    results["diff: Alt+D shows the clean result"] = not session.showing_diff and not ghosts()
    await keys("alt+d")
    results["diff: Alt+D again shows the diff"] = session.showing_diff and bool(ghosts())
    await keys("alt+bracketright", "alt+bracketright", "alt+bracketright")
    shot("code-after-three-alternatives.png")
    results["Alt+] three times: still under review"] = session.state == "ready" and not session.showing_original
    viewport = editor.viewport()
    centre = viewport.mapToGlobal(viewport.rect().center())
    subprocess.run(["xdotool", "mousemove", str(centre.x()), str(centre.y())], check=True)
    scrolled = editor.verticalScrollBar().value()
    for _ in range(12):
        subprocess.run(["xdotool", "click", "4"], check=True)  # the wheel, up: away from the region
    await asyncio.sleep(0.3)
    results["the view scrolled away before Esc"] = scrolled > 0 and editor.verticalScrollBar().value() < scrolled
    await keys("Escape")
    await until(lambda: editor.session is None, 10, "Esc")
    shot("code-after-esc.png")
    results["Esc: the user's text, byte for byte"] = editor.toPlainText() == users
    await keys("ctrl+s")
    await asyncio.sleep(0.5)
    results["Esc then Ctrl+S: the file byte-identical"] = path.read_bytes() == users.encode()


async def typo_fix(window, path: Path, results: dict[str, bool], shot) -> None:
    """A one-line slip rewritten at 30%: the fix is shown, and Tab writes it into the file."""
    from sfumato.app.inlinebox import InlineBox

    editor = window.tabs.open_path(str(path)).editor
    editor.setFocus()
    await asyncio.sleep(0.3)
    await keys("ctrl+Home", "Down", "Down", "End", "shift+Home", "ctrl+k")
    await until(lambda: editor.viewport().findChild(InlineBox) is not None, 10, "the strength box")
    box = editor.viewport().findChild(InlineBox)
    for _ in range(10):
        if box.strength.value() <= 30:
            break
        await keys("Next")  # Page Down on the focused slider
    results["the strength box's slider went down to 30% by keys"] = box.strength.value() == 30
    await keys("Return")
    await until(lambda: editor.session is not None, 10, "the session")
    session = editor.session
    await until(lambda: session.state != "running", what="the fix")
    shot("typo-fix.png")
    results["typo: the line comes back fixed"] = session.state == "ready" and "    return result" in editor.toPlainText().split("\n")
    await keys("Tab")
    await until(lambda: editor.session is None, 10, "Tab")
    await keys("ctrl+s")
    await asyncio.sleep(0.5)
    results["typo: Tab and Ctrl+S write the fixed line"] = path.read_text() == TYPO.replace("retrun", "return")


if __name__ == "__main__":
    sys.exit(main())
