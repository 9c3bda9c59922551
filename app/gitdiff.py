"""Lines changed since the last commit, for the marks beside the line numbers.

``committed_text`` asks git for the file as HEAD has it; ``line_changes`` compares that with
the text being edited, line by line.
"""

from __future__ import annotations

import os
import subprocess
from difflib import SequenceMatcher

from sfumato.app import fileio

MAX_COMPARED_CHARS = 2_000_000  # larger files get no marks: comparing them on every edit would lag
GIT_TIMEOUT_S = 5
EXACT_DIFF_LINES = 2_000  # a changed stretch longer than this is compared with difflib's autojunk (faster, coarser)


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
    # Edits are usually in one place: the lines before and after it are matched off cheaply, and
    # only the middle goes to SequenceMatcher (which is quadratic on many equal lines, like blanks).
    same_start = 0
    while same_start < min(len(old), len(new)) and old[same_start] == new[same_start]:
        same_start += 1
    same_end = 0
    while same_end < min(len(old), len(new)) - same_start and old[-1 - same_end] == new[-1 - same_end]:
        same_end += 1
    old_middle, new_middle = old[same_start : len(old) - same_end], new[same_start : len(new) - same_end]
    matcher = SequenceMatcher(None, old_middle, new_middle, autojunk=len(new_middle) > EXACT_DIFF_LINES)
    marks: dict[int, str] = {}
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        j1, j2 = j1 + same_start, j2 + same_start
        if tag == "insert":
            marks.update(dict.fromkeys(range(j1, j2), "added"))
        elif tag == "replace":
            marks.update(dict.fromkeys(range(j1, j2), "modified"))
        elif tag == "delete":
            marks.setdefault(min(j1, len(new) - 1), "deleted")
    return marks
