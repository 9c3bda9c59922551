"""Hot exit: unsaved documents are copied to a recovery folder, and offered back after a crash.

Every running editor owns one session folder under the recovery root::

    ROOT/<pid>-<random>/lock          a QLockFile: held while the editor runs, stale once it died
    ROOT/<pid>-<random>/<n>.recovery  one unsaved document: a JSON header line, then its text

The root is ``$SFUMATO_RECOVERY_DIR`` when set (tests), else ``recovery`` in the platform's
application-data folder; the root and the session folders are 0700, the copies 0600. Every ``SNAPSHOT_MS`` and when the application quits, each modified
document whose text changed since the last copy is written atomically (``fileio.write_atomic``;
a large document, whose copy stalls the window, at most once every ``COPY_SHARE`` times its last copy's time),
and copies of documents that were saved or closed are removed. A copy holds
``editor.saved_text()``: the user's text, never an infill draft (docs/architecture.md, "The rules that protect the user's text").

On the next start, session folders whose lock is free (their editor is gone: a crash, a kill, a
power cut, or a quit with documents left unsaved) are offered back. Restoring opens each copy in
a new tab, modified, with its original path and file format, and the text byte for byte as it
was; the old folder is removed only after the restored documents have been copied again.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, QStandardPaths, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from sfumato.app import fileio
from sfumato.app.document import Document

log = logging.getLogger(__name__)

SNAPSHOT_MS = 2000
# A copy is made on the UI thread (the document's text cannot be read from another): a document's
# next copy waits this many times as long as its last took, so copies take at most 1/COPY_SHARE
# of the time. A 40 MB document's copy takes about a second: it was made every 2 s while typing.
COPY_SHARE = 50
ROOT_VARIABLE = "SFUMATO_RECOVERY_DIR"
LOCK_NAME = "lock"
SUFFIX = ".recovery"
FORMAT_VERSION = 1
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600  # a copy holds what the user typed: only they may read it


def recovery_root() -> Path:
    """Where session folders live: ``$SFUMATO_RECOVERY_DIR``, else the app-data ``recovery`` folder."""
    override = os.environ.get(ROOT_VARIABLE)
    if override:
        return Path(override)
    return Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)) / "recovery"


@dataclass(frozen=True)
class RecoveredDocument:
    """One copy read back: the text as it was and where it came from (``path`` None: untitled)."""

    text: str
    path: str | None
    format: fileio.TextFormat
    name: str
    disk_stamp: tuple[int, int] | None  # the file as last read or saved: a later change is detected on save


def encode_copy(document: Document) -> bytes:
    header = {
        "version": FORMAT_VERSION,
        "path": document.path,
        "name": document.name,
        "encoding": document.format.encoding,
        "bom": document.format.bom,
        "newline": document.format.newline,
        "disk_stamp": document.disk_stamp,
    }
    # surrogatepass: a lone surrogate pasted into the editor survives the round trip too
    return json.dumps(header).encode("utf-8") + b"\n" + document.editor.saved_text().encode("utf-8", "surrogatepass")


def decode_copy(data: bytes) -> RecoveredDocument:
    """A copy's bytes -> RecoveredDocument; ValueError when it is not one."""
    head, separator, body = data.partition(b"\n")
    if not separator:
        raise ValueError("no header line")
    header = json.loads(head)
    if not isinstance(header, dict) or header.get("version") != FORMAT_VERSION:
        raise ValueError("unknown recovery format")
    _check_header(header)
    fmt = fileio.TextFormat(header["encoding"], bool(header["bom"]), header["newline"])
    stamp = tuple(header["disk_stamp"]) if header.get("disk_stamp") else None
    return RecoveredDocument(body.decode("utf-8", "surrogatepass"), header["path"], fmt, header["name"], stamp)


def _check_header(header: dict) -> None:
    """ValueError for a damaged header: a field of the wrong type, a line ending or an encoding
    that does not exist (a tab restored with it could never be saved)."""
    stamp = header.get("disk_stamp")
    if not (
        isinstance(header.get("path"), (str, type(None))) and isinstance(header.get("name"), str)
        and isinstance(header.get("encoding"), str) and header.get("newline") in ("\n", "\r\n", "\r")
        and (not stamp or (isinstance(stamp, list) and len(stamp) == 2 and all(type(value) is int for value in stamp)))
    ):
        raise ValueError("a damaged header")
    try:
        codecs.lookup(header["encoding"])
    except LookupError:
        raise ValueError("an unknown encoding") from None


class SessionFolder:
    """This process's folder of copies, locked for as long as the process lives."""

    def __init__(self, root: Path):
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, PRIVATE_FOLDER)  # also closes a root an older version left readable
        self.folder = root / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.folder.mkdir(mode=PRIVATE_FOLDER)
        os.chmod(self.folder, PRIVATE_FOLDER)  # whatever the umask
        self._lock = QLockFile(str(self.folder / LOCK_NAME))
        self._lock.setStaleLockTime(0)  # stale only when the owner is gone, however long it ran
        if not self._lock.tryLock(0):
            raise OSError(f"cannot lock the recovery folder {self.folder}")

    def write(self, name: str, data: bytes) -> None:
        fileio.write_atomic(str(self.folder / name), data, mode=PRIVATE_FILE)

    def remove(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)

    def close(self) -> None:
        """Release the lock; the folder goes too unless it still holds copies (a quit with unsaved work)."""
        self._lock.unlock()
        if not any(self.folder.glob(f"*{SUFFIX}")):
            shutil.rmtree(self.folder, ignore_errors=True)


class Orphan:
    """A session folder whose editor is gone, locked by us while we offer it back."""

    def __init__(self, folder: Path, lock: QLockFile, documents: list[RecoveredDocument]):
        self.folder = folder
        self.documents = documents
        self._lock = lock

    def discard(self) -> None:
        self._lock.unlock()
        shutil.rmtree(self.folder, ignore_errors=True)

    def keep(self) -> None:
        """Leave it for the next start."""
        self._lock.unlock()


def find_orphans(root: Path) -> list[Orphan]:
    """Session folders under ``root`` whose owner is no longer running; empty ones are tidied away."""
    orphans = []
    try:
        folders = sorted(path for path in root.iterdir() if path.is_dir())
    except OSError:  # no recovery folder yet, or one we cannot read
        return orphans
    for folder in folders:
        lock = QLockFile(str(folder / LOCK_NAME))
        lock.setStaleLockTime(0)
        if not lock.tryLock(0):
            continue  # a running editor's folder (or another start offering it right now)
        documents = []
        for copy in sorted(folder.glob(f"*{SUFFIX}")):
            try:
                documents.append(decode_copy(copy.read_bytes()))
            except (OSError, ValueError, KeyError, UnicodeDecodeError):
                continue  # unreadable copies stay on disk with the folder; the rest are offered
        orphan = Orphan(folder, lock, documents)
        if documents:
            orphans.append(orphan)
        elif not any(folder.glob(f"*{SUFFIX}")):
            orphan.discard()
        else:
            orphan.keep()
    return orphans


class Recovery(QObject):
    """Copies ``documents()`` (the window's open documents) every ``interval_ms`` and on ``close``."""

    def __init__(self, documents: Callable[[], list[Document]], root: Path, interval_ms: int = SNAPSHOT_MS, parent=None):
        super().__init__(parent)
        self.root = root
        self._documents = documents
        self._folder = SessionFolder(root)
        self._names: dict[Document, str] = {}
        self._written: dict[Document, tuple] = {}
        self._dirty: set[Document] = set()
        self._due: dict[Document, float] = {}  # when a document's next copy may be made (time.monotonic)
        self._count = 0
        self.box: QMessageBox | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.snapshot)
        self._timer.start()

    @property
    def folder(self) -> Path:
        return self._folder.folder

    def snapshot(self) -> None:
        """Write the copies of modified documents that changed; remove those no longer needed."""
        live = self._documents()
        for document in live:
            if document not in self._names:
                self._count += 1
                self._names[document] = f"{self._count}{SUFFIX}"
                self._dirty.add(document)
                document.editor.document().contentsChanged.connect(lambda d=document: self._dirty.add(d))
                # saved (or undone to the saved text): its copy goes at once, not at the next tick, so a
                # crash right after Ctrl+S does not offer back the text the file already holds
                document.editor.document().modificationChanged.connect(lambda modified, d=document: modified or self._drop(d))
            if not document.is_modified():
                self._drop(document)
                continue
            name = self._names[document]
            stamp = (document.path, document.format)
            due = self._due.get(document, 0.0) <= time.monotonic()
            if due and (document in self._dirty or self._written.get(document) != stamp):
                began = time.monotonic()
                try:
                    self._folder.write(name, encode_copy(document))
                except OSError as error:  # a full disk must not stop the editor; the next tick retries
                    log.warning("cannot write the recovery copy of %s: %s", document.name, error)
                    continue
                finally:  # a copy quicker than a tick's share waits for no more than the next tick
                    wait = COPY_SHARE * (time.monotonic() - began)
                    self._due[document] = time.monotonic() + wait if wait > self._timer.interval() / 1000 else 0.0
                self._dirty.discard(document)
                self._written[document] = stamp
        for document in [d for d in self._names if d not in live]:
            self._folder.remove(self._names.pop(document))
            self._written.pop(document, None)
            self._dirty.discard(document)
            self._due.pop(document, None)

    def _drop(self, document) -> None:
        """Remove ``document``'s copy, if one was written."""
        if self._written.pop(document, None) is not None:
            self._folder.remove(self._names[document])

    def close(self) -> None:
        """On quit: a last snapshot (documents still unsaved stay recoverable), then unlock."""
        self._timer.stop()
        self._due.clear()  # every change is copied now, however large its document
        self.snapshot()
        self._folder.close()


def restore(window, orphan: Orphan) -> list[Document]:
    """Open ``orphan``'s documents in ``window`` as modified tabs; a lone empty untitled tab gives way,
    and so does an unmodified tab of the same file (reopened from the last session, say)."""
    before = window.tabs.documents()
    restored = []
    for copy in orphan.documents:
        for stale in [d for d in window.tabs.documents() if copy.path is not None and d.path == copy.path and not d.is_modified()]:
            window.tabs.close_tab(stale.editor)
        document = window.tabs.new_document()
        document.path, document.format, document.disk_stamp = copy.path, copy.format, copy.disk_stamp
        document.editor.setPlainText(copy.text)
        document.rehighlight()
        document.editor.document().setModified(True)
        window.tabs.took_name(document)
        restored.append(document)
    if len(before) == 1 and before[0].path is None and not before[0].is_modified() and not before[0].editor.toPlainText():
        window.tabs.close_tab(before[0].editor)
    return restored


def offer_restore(window, recovery: Recovery) -> None:
    """Ask once, window-modal and without blocking the event loop, whether to restore what every
    editor that did not close normally left (several after a logout that killed them all)."""
    orphans = find_orphans(recovery.root)
    if orphans:
        _ask(window, recovery, orphans)


def _ask(window, recovery: Recovery, orphans: list[Orphan]) -> None:
    names = ", ".join(copy.name for orphan in orphans for copy in orphan.documents)
    count = sum(len(orphan.documents) for orphan in orphans)
    box = QMessageBox(
        QMessageBox.Icon.Question,
        "Restore unsaved documents?",
        f"Sfumato did not close normally. {count} unsaved document{'s' if count > 1 else ''} can be "
        f"restored: {names}.",
        QMessageBox.StandardButton.NoButton,
        window,
    )
    restore_button = box.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)
    discard_button = box.addButton("Discard", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton("Not Now", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(restore_button)

    def answered() -> None:
        clicked = box.clickedButton()
        if clicked is restore_button:
            for orphan in orphans:
                restore(window, orphan)
            recovery.snapshot()  # copied again before the old copies go
            window.statusBar().showMessage(f"Restored {names}.", 6000)
        for orphan in orphans:
            if clicked in (restore_button, discard_button):
                orphan.discard()
            else:
                orphan.keep()

    box.finished.connect(lambda _result: answered())
    recovery.box = box
    box.open()


def attach(window) -> Recovery | None:
    """Hot exit for ``window``: copies every few seconds and on quit; after a crash, offer them back.

    None, with a status-bar message, when the recovery folder cannot be made: the editor still runs.
    """
    root = recovery_root()
    try:
        recovery = Recovery(window.tabs.documents, root, parent=window)
    except OSError as error:
        window.statusBar().showMessage(f"No crash recovery: cannot use {root} ({error}).", 10000)
        return None
    QApplication.instance().aboutToQuit.connect(recovery.close)
    QTimer.singleShot(0, lambda: offer_restore(window, recovery))
    return recovery
