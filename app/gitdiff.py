"""Lines changed since the last commit, for the marks beside the line numbers.

``committed_text`` asks git for the file as HEAD has it; ``line_changes`` compares that with
the text being edited, line by line.
"""

from __future__ import annotations

import os
import subprocess
from difflib import SequenceMatcher

from app import fileio

MAX_COMPARED_CHARS = 2_000_000  # larger files get no marks: comparing them on every edit would lag
GIT_TIMEOUT_S = 5


def committed_text(path: str) -> str | None:
    """``path`` as the HEAD commit of its git repository has it; None outside git or when untracked."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        shown = subprocess.run(
            ["git", "-C", folder, "show", f"HEAD:./{name}"],
            capture_output=True, timeout=GIT_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.SubprocessError):  # no git, or it hung
        return None
    if shown.returncode != 0:
        return None
    try:
        return fileio.decode(shown.stdout)[0]
    except ValueError:  # binary at HEAD
        return None


def line_changes(base: str, text: str) -> dict[int, str]:
    """{line index in ``text``: "added" | "modified" | "deleted"}; "deleted" marks the line that
    follows removed lines (or the last line when they were at the end)."""
    if len(base) + len(text) > MAX_COMPARED_CHARS:
        return {}
    old, new = base.split("\n"), text.split("\n")
    marks: dict[int, str] = {}
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "insert":
            marks.update(dict.fromkeys(range(j1, j2), "added"))
        elif tag == "replace":
            marks.update(dict.fromkeys(range(j1, j2), "modified"))
        elif tag == "delete":
            marks.setdefault(min(j1, len(new) - 1), "deleted")
    return marks
