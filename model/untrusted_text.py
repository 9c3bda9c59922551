"""Text a model or a server wrote is untrusted input: the one policy for it.

* ``clean_model_text``: what may reach a document or a file. C0 controls other than tab, line
  feed and carriage return, DEL, C1 controls (so every ESC/CSI/OSC sequence loses its introducer)
  and NUL are dropped; a lone surrogate (a server's ``"\\ud800"``) becomes U+FFFD. Every
  ``Candidate`` is cleaned so (``sfumato.model.api``): no backend can hand the editor or the CLI anything else.
* Bidi controls and zero-width characters (``INVISIBLE``) are kept, because right-to-left text
  and emoji sequences need them, but they are never hidden: ``invisible_report`` names them for
  the warning that goes with a result (the editor's status bar, ``sfumato fill``'s stderr).
* ``without_lone_surrogates``: what a model may read. The user's text reaches a model as it is,
  but for a lone surrogate (a pasted half of a pair), which no tokenizer or encoder takes: it
  becomes U+FFFD in every request (``InfillRequest``, ``TemplateRequest``).
* ``terminal_safe``: what may be written to a terminal: every control, invisible or surrogate
  character becomes a visible ``\\uXXXX`` escape, so no text can move the cursor, set a window
  title or reorder a line.
"""

from __future__ import annotations

import re
import unicodedata

DROPPED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
INVISIBLE = re.compile(r"[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
TERMINAL_UNSAFE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def clean_model_text(text: str) -> str:
    """``text`` without controls and NUL, its lone surrogates replaced by U+FFFD."""
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(lambda match: "" if DROPPED.match(match.group()) else "\ufffd", text)


SURROGATE = re.compile(r"[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """``text`` with its lone surrogates (half of a pair, pasted or sent as ``"\\ud800"``), which no
    tokenizer or encoder takes, as U+FFFD; the rest as it is."""
    return SURROGATE.sub("\ufffd", text) if SURROGATE.search(text) else text


def invisible_report(text: str, limit: int = 3) -> str:
    """"" when ``text`` has no bidi control or zero-width character, else e.g. "2 invisible
    characters (U+202E RIGHT-TO-LEFT OVERRIDE, U+200B ZERO WIDTH SPACE)"."""
    found = INVISIBLE.findall(text)
    if not found:
        return ""
    named = [f"U+{ord(char):04X} {unicodedata.name(char, '')}" for char in dict.fromkeys(found)]
    more = ", …" if len(named) > limit else ""
    return f"{len(found)} invisible character{'s' if len(found) > 1 else ''} ({', '.join(named[:limit])}{more})"


def terminal_safe(text: str, keep_lines: bool = False) -> str:
    """``text`` with every control, invisible and surrogate character as a visible escape
    (``keep_lines``: line feeds stay, for text that is meant to span lines)."""

    def escape(match: re.Match) -> str:
        char = match.group()
        return char if keep_lines and char == "\n" else f"\\u{ord(char):04x}"  # also a valid escape inside JSON

    return TERMINAL_UNSAFE.sub(escape, text)
