"""Screenshots of the real app: open a sample, rewrite a function body, capture the animation.

    python packaging/screenshots.py --model SPEC [--out resources/screenshots]

Runs under a virtual X server (``Xvfb``, started here when there is no DISPLAY; install with
``apt-get install -y xvfb libxcb-icccm4 libxcb-keysyms1``). Writes ``rewrite-start.png`` (the Ctrl+K box),
``rewrite-mid.png``, ``rewrite-end.png`` (the result reviewed as a diff), ``rewrite-clean.png`` (the same
result, Alt+D: clean), ``rewrite.gif`` (one frame per pass), ``gap-fill-end.png`` and ``suggestion.png`` (a
suggestion while typing, when the model is sure of one there), and prints the time from launch
to the window on screen and the longest the event loop was blocked while denoising.
"""

from __future__ import annotations

import time

LAUNCHED = time.perf_counter()

import argparse  # noqa: E402 - the launch time is taken before anything else
import asyncio  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "resources" / "samples" / "inventory.py"
TEMPLATE = REPO / "resources" / "samples" / "template.py"


def start_display() -> subprocess.Popen | None:
    """Start Xvfb on a free display unless one is already set."""
    if os.environ.get("DISPLAY"):
        return None
    if shutil.which("Xvfb") is None:
        sys.exit("screenshots: no DISPLAY and no Xvfb (apt-get install -y xvfb libxcb-icccm4 libxcb-keysyms1)")
    display = ":%d" % (90 + os.getpid() % 100)
    server = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x820x24", "-nolisten", "tcp"])
    os.environ["DISPLAY"] = display
    time.sleep(1.0)
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="model spec: embedded, a folder or a hub id")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default=str(REPO / "resources" / "screenshots"))
    parser.add_argument("--slow-motion", type=int, default=0, help="ms per pass (0: as at default settings, paced by the editor)")
    args = parser.parse_args()
    server = start_display()
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    try:
        return shoot(args)
    finally:
        if server is not None:
            server.terminate()


def save_animation(frames, path: Path) -> None:
    """Save Qt pixmaps as a looping GIF: one frame per drawn pass, the result held longest."""
    import io

    from PIL import Image
    from PySide6.QtCore import QBuffer, QIODevice

    images = []
    for pixmap in frames:
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        pixmap.save(buffer, "PNG")
        image = Image.open(io.BytesIO(bytes(buffer.data()))).convert("RGB")
        images.append(image.resize((image.width * 2 // 3, image.height * 2 // 3)))
    durations = [900] + [350] * (len(images) - 2) + [2500]
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations[: len(images)], loop=0)
    print(f"wrote {path} ({len(images)} frames)", flush=True)


def shoot(args) -> int:
    import qasync
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtGui import QTextCursor
    from PySide6.QtWidgets import QApplication

    from sfumato.app.ui_thread_gc import UiThreadCollector

    app = QApplication(sys.argv[:1])
    UiThreadCollector(app).start()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    from sfumato.app.mainwindow import MainWindow, open_files

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = QSettings(str(out / ".screenshot-settings.ini"), QSettings.Format.IniFormat)
    store.clear()
    window = MainWindow(loop, store, model_spec=args.model)
    window.settings.device = args.device
    window.settings.slow_motion_ms = args.slow_motion
    window.settings.max_new_tokens = 48
    window.settings.alternatives = 2
    window.apply_settings()
    window.resize(1180, 760)
    open_files(window, [str(SAMPLE.parent), str(SAMPLE)])  # the samples folder in the sidebar, the sample open
    window.show()
    app.processEvents()
    shown = time.perf_counter() - LAUNCHED
    print(f"launch to window: {shown:.2f} s", flush=True)

    stalls = []
    ticker = QTimer()
    ticker.setInterval(5)
    last = [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        stalls.append(now - last[0])
        last[0] = now

    ticker.timeout.connect(tick)

    def grab(name: str) -> None:
        app.processEvents()
        window.grab().save(str(out / name))
        print(f"wrote {out / name}", flush=True)

    async def scenario() -> int:
        window.ai.start_engine()
        while window.ai.worker.loading:
            await asyncio.sleep(0.05)
        if window.ai.worker.info is None:
            print(f"no model: {window.ai.worker.error}", file=sys.stderr)
            return 1
        print(f"model loaded: {time.perf_counter() - LAUNCHED:.2f} s after launch", flush=True)
        editor = window.tabs.current_editor()
        text = editor.toPlainText()
        start = text.index("    low = [")
        end = text.index("    return low\n") + len("    return low")
        cursor = editor.textCursor()
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        editor.setTextCursor(cursor)
        editor.centerCursor()
        window.ai.rewrite()  # Ctrl+K: the strength box at the selection
        grab("rewrite-start.png")
        from sfumato.app.inlinebox import InlineBox

        editor.viewport().findChild(InlineBox).close_box()
        last[0] = time.perf_counter()
        ticker.start()
        session = window.ai.starter.rewrite(editor, strength=0.7)
        window.ai.start(editor, lambda: session)
        passes: list[str] = []
        session.progress.connect(passes.append)
        mid_taken = False
        frames = [editor.viewport().grab()]
        while session.state == "running":
            await asyncio.sleep(0.01)
            if len(passes) > len(frames) - 1:  # a pass was drawn: one animation frame
                frames.append(editor.viewport().grab())
            if len(passes) >= 3 and not mid_taken:
                grab("rewrite-mid.png")
                mid_taken = True
        ticker.stop()
        grab("rewrite-end.png")
        frames.append(editor.viewport().grab())
        save_animation(frames, out / "rewrite.gif")
        session.set_diff(False)  # what Alt+D shows: the clean result
        grab("rewrite-clean.png")
        if stalls:
            print(f"largest UI stall while denoising: {max(stalls) * 1000:.0f} ms "
                  f"(event-loop gap, 5 ms timer, {len(stalls)} ticks)", flush=True)
        session.reject()
        window.tabs.open_path(str(TEMPLATE))
        gaps = window.ai.starter.fill_gaps(window.tabs.current_editor())
        window.ai.start(window.tabs.current_editor(), lambda: gaps)
        while gaps.state == "running":
            await asyncio.sleep(0.02)
        grab("gap-fill-end.png")
        gaps.reject()
        return await suggest()

    async def suggest() -> int:
        """Type a new function below ``report`` as a user would, and wait for a suggestion."""
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        window.tabs.setCurrentIndex(0)
        editor = window.tabs.current_editor()
        window.activateWindow()
        editor.setFocus()
        for _ in range(40):  # suggestions follow the keyboard's focus
            if editor.hasFocus():
                break
            await asyncio.sleep(0.05)
        cursor = editor.textCursor()
        cursor.setPosition(editor.toPlainText().index('    return "\\n".join(lines)') + len('    return "\\n".join(lines)'))
        cursor.insertText("\n\n\n")
        editor.setTextCursor(cursor)
        QTest.keyClicks(editor, "def total_value(items: list[Item]) -> float:")
        QTest.keyClick(editor, Qt.Key.Key_Return)
        QTest.keyClicks(editor, "return sum(item.total() for ")
        for _ in range(600):
            if editor.suggestion.shown:
                break
            await asyncio.sleep(0.05)
        else:
            print("no suggestion came (the model was not sure enough)", flush=True)
            return 0
        editor.centerCursor()
        grab("suggestion.png")
        return 0

    with loop:
        code = loop.run_until_complete(scenario())
    for document in window.tabs.documents():
        document.editor.document().setModified(False)
    window.close()
    os.remove(out / ".screenshot-settings.ini")
    return code


if __name__ == "__main__":
    sys.exit(main())
