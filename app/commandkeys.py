"""Which keys belong to Sfumato's commands, so the text widget never uses them to edit text.

QPlainTextEdit has key bindings of its own, and some clash with Sfumato's: on X11 Ctrl+K deletes
to the end of the line and Ctrl+D deletes a character, and an Alt+] that no shortcut takes types
a "]". The editor declines such keys (``CodeEditor.command_keys``): a window shortcut runs the
command, and with none active the key does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeyEvent, QKeySequence

from sfumato.app.settings import DEFAULT_KEYS

REVIEW_ONLY = ("accept", "accept_word", "reject")  # Tab, Ctrl+Right and Esc are ordinary keys outside a review


@dataclass
class SessionKeys:
    """The keys an infill session answers to while it runs or waits for review."""

    accept: QKeySequence
    reject: QKeySequence
    next_alternative: QKeySequence
    previous_alternative: QKeySequence
    try_again: QKeySequence
    toggle_diff: QKeySequence
    accept_word: QKeySequence


def key_names(keys: SessionKeys) -> dict[str, str]:
    """Each session key's name as the platform writes it (the status line tells them)."""
    return {field: getattr(keys, field).toString(QKeySequence.SequenceFormat.NativeText) for field in vars(keys)}


def session_keys(keys: dict[str, str]) -> SessionKeys:
    """The session's keys from the settings' names for them."""
    return SessionKeys(*(QKeySequence(keys[name]) for name in ("accept", "reject", "next_alternative", "previous_alternative", "try_again",
                                                                  "toggle_diff", "accept_word")))


DEFAULT_SESSION_KEYS = session_keys(DEFAULT_KEYS)

# The text widget's own editing keys stay its own even where a menu entry shows them too
# (Ctrl+C copies every cursor's selection, Ctrl+Z ends a session first).
TEXT_WIDGET_KEYS = (
    QKeySequence.StandardKey.Undo, QKeySequence.StandardKey.Redo, QKeySequence.StandardKey.Cut,
    QKeySequence.StandardKey.Copy, QKeySequence.StandardKey.Paste, QKeySequence.StandardKey.SelectAll,
)


def default_command_keys() -> frozenset[int]:
    """The AI keys at their defaults: what a bare editor (no window, no settings) declines."""
    return command_keys_of(DEFAULT_KEYS, ())


def is_command_key(event: QKeyEvent, command_keys: frozenset[int]) -> bool:
    """Whether ``event`` is one of ``command_keys`` and not one of the text widget's own. A set
    lookup: it runs for every key typed (matching each of a window's ~50 shortcuts took 0.9 ms a
    key, a tenth of a key's time in a 40 MB file)."""
    if event.keyCombination().toCombined() not in command_keys:
        return False
    return not any(event.matches(standard) for standard in TEXT_WIDGET_KEYS)


def key_matches(event: QKeyEvent, sequence: QKeySequence) -> bool:
    """Whether the key pressed is exactly ``sequence``."""
    pressed = QKeySequence(event.keyCombination())
    return not sequence.isEmpty() and pressed.matches(sequence) == QKeySequence.SequenceMatch.ExactMatch


def command_keys_of(keys: dict[str, str], actions: Iterable[QAction]) -> frozenset[int]:
    """A window's command keys: the AI keys as the settings have them and every action's shortcut,
    each as its key combination (a sequence of several presses never matches one press exactly)."""
    ai_keys = [QKeySequence(key) for name, key in keys.items() if name not in REVIEW_ONLY]
    sequences = ai_keys + [shortcut for action in actions for shortcut in action.shortcuts()]
    return frozenset(sequence[0].toCombined() for sequence in sequences if sequence.count() == 1)
