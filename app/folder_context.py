"""The open folder's text files as project context: read off the UI thread, bounded, cached.

``read_folder`` is plain Python (it runs on a worker thread): it walks the folder's files that
may be sent (``sfumato.app.context_files``: no hidden, secret or git-ignored file) and reads them with
``sfumato.model.project_context.read_folder_files``, the reader the held-out measurement uses too: the
text files within its bounds (file count, bytes per file, total bytes; binary and non-UTF-8 files
are skipped), cut into scored-ready chunks. A file whose modification time and size are unchanged
is not read again. ``FolderContext`` holds the
result for the window: a request takes whatever it holds at that moment and never waits for a
read; opening the folder, saving a file and every request start a refresh in the background.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time

from sfumato.app.context_files import ContextRules, is_hidden_or_secret
from sfumato.app.folder import MAX_FILES
from sfumato.model.project_context import ChunkIndex, FolderFile, read_folder_files

# A folder whose read takes longer than SLOW_READ_S (a home folder: 4-7 s of Python, beside the
# model's thread and the window's) is not read again until READ_SHARE times that has passed: every
# request and save started one, and one asked for while another ran followed it at once.
SLOW_READ_S = 0.25
READ_SHARE = 10


def read_folder(root: str, previous: dict[str, FolderFile]) -> dict[str, FolderFile]:
    """Absolute path -> ``FolderFile`` for ``root``'s files that may be sent, within the bounds;
    files unchanged since ``previous`` keep their chunks unread."""
    return read_folder_files(root, itertools.islice(ContextRules(root).files(), MAX_FILES), previous)


def _read_and_index(root: str, previous: dict[str, FolderFile]) -> tuple[dict[str, FolderFile], ChunkIndex]:
    files = read_folder(root, previous)
    return files, ChunkIndex((path, chunk) for path, file in files.items() for chunk in file.chunks)


class FolderContext:
    """The open folder's cached chunks, refreshed on a worker thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self.root = ""
        self.files: dict[str, FolderFile] = {}
        self.index = ChunkIndex(())  # the files' chunks by the names in them
        self._rules = ContextRules("")
        self._refreshing: asyncio.Task | None = None
        self._again = False  # something changed while a refresh ran: run one more
        self._quiet_until = 0.0  # after a slow read, no other starts before this (time.monotonic)

    def open(self, root: str) -> asyncio.Task | None:
        self.root = os.path.abspath(root)
        self.files, self.index, self._quiet_until = {}, ChunkIndex(()), 0.0
        return self.refresh()

    def refresh(self) -> asyncio.Task | None:
        """Re-read what changed in the background (a running refresh runs once more after); none
        starts while a slow read's quiet time lasts (``READ_SHARE``)."""
        if not self.root:
            return None
        self._rules = ContextRules(self.root)  # .gitignore files are read again
        if self._refreshing is not None and not self._refreshing.done():
            self._again = True
            return self._refreshing
        if time.monotonic() < self._quiet_until:
            return self._refreshing
        self._refreshing = self._loop.create_task(self._refresh())
        return self._refreshing

    async def _refresh(self) -> None:
        self._again = True
        while self._again and time.monotonic() >= self._quiet_until:
            self._again = False
            root, began = self.root, time.monotonic()
            files, index = await self._loop.run_in_executor(None, _read_and_index, root, self.files)
            took = time.monotonic() - began
            if root == self.root:  # another folder opened meanwhile: its own refresh fills it
                self.files, self.index = files, index
                self._quiet_until = time.monotonic() + READ_SHARE * took if took > SLOW_READ_S else 0.0

    def admits(self, path: str) -> bool:
        """An open tab's file at ``path`` may go as context: not hidden or secret, nor git-ignored
        when it lies in the open folder."""
        inside = bool(self.root) and os.path.commonpath([self.root, path]) == self.root
        return self._rules.admits(os.path.relpath(path, self.root)) if inside else not is_hidden_or_secret(os.path.basename(path))

    def sent_files(self) -> list[str]:
        """The open folder's files whose text goes as context now, relative to it."""
        return sorted(os.path.relpath(path, self.root) for path, file in self.files.items() if file.chunks)

