"""A guard against a reference-counting bug in PySide6 6.12 on Python 3.11.

Every call from Python to a Qt method that returns ``void`` (``setFormat``, ``setExtraSelections``,
``setTabStopDistance``, ...) drops one reference to ``None`` without having taken it. An editor
makes millions of such calls; when ``None``'s count reaches zero the interpreter aborts ("Fatal
Python error: none_dealloc"), usually at exit, sometimes mid-session. Python 3.12 made ``None``
immortal, which hides the bug; on older Pythons we do the same by hand: ``None`` is never freed
anyway, so raising its count by 2**40 changes nothing else.
"""

from __future__ import annotations

import ctypes
import sys

_HEADROOM = 1 << 40


def make_none_immortal() -> None:
    """Raise ``None``'s reference count far beyond what leaked decrements can use up."""
    if sys.version_info >= (3, 12):
        return
    count = ctypes.c_ssize_t.from_address(id(None))  # ob_refcnt is the first field of every object
    if count.value < _HEADROOM:
        count.value += _HEADROOM
