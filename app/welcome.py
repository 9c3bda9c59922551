"""The start state: launched with no file, the empty editor says how to begin.

The welcome is the untitled document's placeholder text, which Qt draws only while the document
is empty: it is no text of the document, so it is never saved and marks nothing unsaved. It goes
for good at the first edit; opening a file replaces the empty untitled document (DocumentTabs).
"""

from __future__ import annotations

from PySide6.QtGui import QKeySequence

from sfumato.app.codeeditor import CodeEditor


def _key(name: str | QKeySequence.StandardKey) -> str:
    return QKeySequence(name).toString(QKeySequence.SequenceFormat.NativeText) or "(no key)"


def welcome_text(keys: dict[str, str], model: str) -> str:
    """The welcome, with the user's AI keys and ``model`` (what is loaded, or that it is loading)."""
    return "\n".join([
        "Welcome to Sfumato: an editor whose AI edits are made by a diffusion model, which",
        "rewrites text in place, pass by pass, from noise to the result.",
        "",
        f"Open a file with {_key(QKeySequence.StandardKey.Open)}, a folder with File > Open Folder, or just type here.",
        "",
        f"  {_key(keys['rewrite']):<14} rewrite the selection, or write at the cursor",
        f"  {_key(keys['fill_gaps']):<14} fill every [MASK] gap of the file at once",
        f"  {_key(keys['accept']) + ' / ' + _key(keys['reject']):<14} accept / reject the result",
        f"  {_key(keys['next_alternative']) + ' / ' + _key(keys['previous_alternative']):<14} other alternatives, then the original",
        f"  {_key(keys['try_again']):<14} try again",
        f"  {'(typing)':<14} a pause shows the rest of the line where the model is sure of it; {_key(keys['accept'])} takes it",
        "",
        f"Model: {model}.",
        "Another model: File > Settings > Model (a model folder or a hub id), or sfumato --model SPEC.",
        "Every key: Help > Keyboard Shortcuts.",
    ])


class Welcome:
    """The welcome shown in ``editor`` until its first edit."""

    def __init__(self, editor: CodeEditor):
        self.editor = editor
        self.shown = True
        editor.document().contentsChange.connect(self._edited)
        editor.destroyed.connect(self._closed)  # its tab closed, or replaced by a file opened

    def show(self, text: str) -> None:
        """Show ``text``, drawn at once: Qt repaints a placeholder only when it appears or goes."""
        if self.shown:
            self.editor.setPlaceholderText(text)
            self.editor.viewport().update()

    def _edited(self, _position: int, removed: int, added: int) -> None:
        if self.shown and (removed or added):
            self.shown = False
            self.editor.setPlaceholderText("")
            self.editor.document().contentsChange.disconnect(self._edited)

    def _closed(self) -> None:
        self.shown = False
