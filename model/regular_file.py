"""Opening a file that may be anything: a named pipe blocks a plain ``open`` until some program
writes to it (for ever, in a folder the editor reads on its own), and a device reads on without end.

``open_regular`` opens without blocking and checks what it opened (not the name, which could be
swapped in between): a regular file, or ``NotRegularFile``. The editor's documents, the open
folder's project context and its ``.gitignore`` files are read through it.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO


class NotRegularFile(OSError):
    """The path is a device, a named pipe, a socket or a folder."""


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for binary reading if it is a regular file; ``NotRegularFile`` if not,
    ``OSError`` as raised."""
    handle = os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)), "rb")
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise NotRegularFile(f"{path} is not a regular file (a device, a pipe, a socket or a folder)")
    return handle
