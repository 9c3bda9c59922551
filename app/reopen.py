"""The files that were open when the editor last closed, with their cursors, for its next start.

Kept in the settings store as one JSON value. A damaged value, or a file that has gone since,
is skipped: reopening never stands in the way of starting.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from PySide6.QtCore import QSettings

KEY = "session/open_files"


@dataclass(frozen=True)
class OpenFile:
    path: str
    anchor: int  # the selection, in Qt positions
    position: int
    first_line: int  # the top visible line (0-based)
    current: bool = False


def remember(store: QSettings, files: list[OpenFile]) -> None:
    store.setValue(KEY, json.dumps([asdict(item) for item in files]))
    store.sync()


def recall(store: QSettings) -> list[OpenFile]:
    """The remembered files, in tab order; [] when nothing (readable) was remembered."""
    try:
        items = json.loads(str(store.value(KEY, "[]")))
        return [
            OpenFile(str(item["path"]), int(item["anchor"]), int(item["position"]), int(item["first_line"]), bool(item.get("current")))
            for item in items
        ]
    except (ValueError, TypeError, KeyError):
        return []
