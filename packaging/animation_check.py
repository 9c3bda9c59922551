"""The first-day check of issue 17, with real key presses under a virtual X display.

    python packaging/animation_check.py [--model SPEC] [--frames DIR]

With a fresh configuration (a temporary XDG_CONFIG_HOME) it opens a 9-line Python file and
checks: the window is on screen within 1.5 s of launch; Ctrl+A, Ctrl+K, Enter (typed by
``xdotool`` through the window manager, ``openbox``, when there is one) starts a rewrite whose
animation, grabbed from the screen back to back from Enter until the result is shown, holds at
least 5 distinct frames of the text area; Esc then Ctrl+S leaves the file byte-identical. Prints
one line per figure and exits 1 when a check fails. Needs ``apt-get install -y xvfb
libxcb-icccm4 libxcb-keysyms1 xdotool openbox`` (Xvfb is started here when there is no DISPLAY).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from screenshots import start_display  # packaging/ is this script's folder

SAMPLE = '''def median(values):
    """The middle value of a list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    low, high = ordered[middle - 1], ordered[middle]
    return (low + high) / 2
print(median([3, 1, 2]))
'''
WINDOW_WITHIN_S = 1.5
MIN_FRAMES = 5


def press(keys: str) -> None:
    """Type ``keys`` (xdotool names, e.g. ctrl+k) into the focused window."""
    subprocess.Popen(["xdotool", "key", "--clearmodifiers", keys])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="model spec: embedded, a folder or a hub id")
    parser.add_argument("--frames", help="save the distinct frames of the animation here")
    args = parser.parse_args()
    if shutil.which("xdotool") is None:
        sys.exit("animation_check: xdotool is needed to type the keys (apt-get install -y xdotool)")
    server = start_display()
    manager = subprocess.Popen(["openbox"], stderr=subprocess.DEVNULL) if shutil.which("openbox") else None
    home = tempfile.mkdtemp(prefix="sfumato-check-")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(home, "config")  # a fresh configuration
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    path = Path(home) / "median.py"
    path.write_text(SAMPLE)
    try:
        return check(args, path, launched=time.perf_counter())  # the display is up: the app starts now
    finally:
        for process in (manager, server):
            if process is not None:
                process.terminate()
        shutil.rmtree(home, ignore_errors=True)


def check(args, path: Path, launched: float) -> int:
    import qasync
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from sfumato.app.ui_thread_gc import UiThreadCollector

    app = QApplication(sys.argv[:1])
    UiThreadCollector(app).start()
    app.setApplicationName("Sfumato")
    app.setOrganizationName("Sfumato")
    app.setCursorFlashTime(0)  # a blinking cursor would count as frames of its own
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    from sfumato.app.mainwindow import MainWindow, first_show, open_files

    window = MainWindow(loop, QSettings(), model_spec=args.model)
    open_files(window, [str(path)])
    first_show(window)
    original = path.read_bytes()
    results: dict[str, bool] = {}

    async def scenario() -> None:
        while not (window.windowHandle() is not None and window.windowHandle().isExposed()):
            await asyncio.sleep(0.005)
        shown = time.perf_counter() - launched
        results["window on screen in time"] = shown <= WINDOW_WITHIN_S
        print(f"launch to window on screen: {shown:.2f} s (at most {WINDOW_WITHIN_S} s)", flush=True)
        while window.ai.worker.info is None and window.ai.worker.error is None:
            await asyncio.sleep(0.05)
        if window.ai.worker.info is None:
            print(f"no model: {window.ai.worker.error}", flush=True)
            results["model loaded"] = False
            return
        editor = window.tabs.current_editor()
        window.activateWindow()
        editor.setFocus()
        await asyncio.sleep(0.3)
        press("ctrl+a")
        press("ctrl+k")
        from sfumato.app.inlinebox import InlineBox

        while editor.viewport().findChild(InlineBox) is None:
            await asyncio.sleep(0.01)
        frames = await record(window, editor, lambda: press("Return"))
        results[f"at least {MIN_FRAMES} distinct frames"] = len(frames) >= MIN_FRAMES
        print(f"distinct frames of the text area from Enter to the result: {len(frames)}", flush=True)
        if args.frames:
            os.makedirs(args.frames, exist_ok=True)
            for index, image in enumerate(frames):
                image.save(os.path.join(args.frames, f"frame-{index:02d}.png"))
        press("Escape")
        while editor.session is not None:
            await asyncio.sleep(0.01)
        press("ctrl+s")
        await asyncio.sleep(0.5)
        results["Esc, Ctrl+S: file byte-identical"] = path.read_bytes() == original
        print(f"file after Esc and Ctrl+S byte-identical: {path.read_bytes() == original}", flush=True)

    with loop:
        loop.run_until_complete(asyncio.wait_for(scenario(), timeout=300))
    for document in window.tabs.documents():
        document.editor.document().setModified(False)
    window.close()
    failed = [name for name, ok in results.items() if not ok]
    print("check: " + ("passed" if not failed else "FAILED: " + ", ".join(failed)), flush=True)
    return 1 if failed else 0


async def record(window, editor, start) -> list:
    """Grab the text area from the screen back to back from ``start`` until the result is shown
    and a moment after; the distinct images, in order."""
    viewport = editor.viewport()
    screen = window.windowHandle().screen()
    seen, frames = set(), []

    def grab() -> None:
        corner = viewport.mapToGlobal(viewport.rect().topLeft())
        image = screen.grabWindow(0, corner.x(), corner.y(), viewport.width(), viewport.height()).toImage()
        digest = hashlib.sha1(bytes(image.constBits())).hexdigest()
        if digest not in seen:
            seen.add(digest)
            frames.append(image)

    grab()
    start()
    while editor.session is None:
        grab()
        await asyncio.sleep(0)
    done = None
    while done is None or time.perf_counter() - done < 0.3:
        grab()
        await asyncio.sleep(0)
        if done is None and (editor.session is None or editor.session.state != "running"):
            done = time.perf_counter()
    return frames[1:]  # the first is the text before Enter


if __name__ == "__main__":
    sys.exit(main())
