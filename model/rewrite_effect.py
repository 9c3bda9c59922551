"""What a rewrite at a given strength does to a selection, in words the Ctrl+K box shows.

The embedded engine reads ``strength`` in two ways (``sfumato.model.lm_engine``): below
``HEAVY_REWRITE`` it fixes slips and keeps every other token; from there on it writes the least
likely lines of the selection again, as fresh one-line infills that do not see the old line
(``sfumato.model.line_rewrite``). Every other backend renoises that share of the selection's
tokens. A slider that says only "60%" hid that a one-line selection is then written from scratch.
No torch here: the editor's window imports this module.
"""

from __future__ import annotations

import math

from sfumato.model.api import ModelInfo

HEAVY_REWRITE = 0.5  # a rewrite at this strength or more writes whole lines again


def lines_to_write(strength: float, lines_with_text: int) -> int:
    """How many of a selection's lines with text a heavy rewrite writes again (at least one)."""
    return min(lines_with_text, max(1, math.ceil(strength * lines_with_text))) if lines_with_text else 0


def rewrite_effect(info: ModelInfo, strength: float, selection: str) -> str:
    """A few words on what a rewrite of ``selection`` at ``strength`` does with the model ``info``."""
    if info.backend != "lm-denoiser":
        return f"renoises {round(strength * 100)}% of it"
    written = sum(1 for line in selection.split("\n") if line.strip())
    if strength < HEAVY_REWRITE or not written:
        return "fixes slips, keeps the rest"
    if written == 1:
        return "writes the line anew"
    count = lines_to_write(strength, written)
    # lines inside a bracket another line closes are not written alone, so it may be fewer
    return f"writes all {written} lines anew" if count == written else f"writes up to {count} of {written} lines anew"
