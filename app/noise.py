"""Noise drawn as noise: the positions of a passing draft that are still undecided show glyphs.

An absorbing-mask model leaves a position it has not decided as its mask token, which has no
text, so the draft would show nothing there (and the lines would collapse). For display only,
each such position gets one to three glyphs from ``GLYPHS``, picked by a generator seeded with
the pass, the region and the alternative: the same pass always looks the same, the next one
differs. The app cannot see the model's vocabulary (the engine API carries text only), so the
glyphs are the letters, digits and punctuation code is made of.

A passing draft may also have fewer or more lines than the text it replaces (a model stops its
draft at the first place it guesses the end, line breaks settle late, and noise has line breaks
of its own), so the lines below would jump up and down from pass to pass. A rewritten region keeps
its original number of lines: the missing ones are noise lines shaped like the original's last
lines (their indentation, then as many glyphs as they had characters), and line breaks beyond the
original's are shown as spaces. An infill (no original) grows as its draft does. Results
(``final`` drafts) are never changed.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence

from sfumato.model.api import Candidate, Draft, TokenState

GLYPHS = string.ascii_letters + string.digits + "_.,:;=+-*/()[]{}<>#'\""


def with_noise(drafts: Sequence[Draft], originals: Sequence[str]) -> tuple[Draft, ...]:
    """``drafts`` (one per region, the region's original text in ``originals``) as they are shown;
    as many drafts as came in, so a wrong count still shows as one."""
    return tuple(
        draft if draft.final else Draft(
            draft.batch_passes,
            tuple(_noisy(candidate, random.Random(f"{draft.batch_passes}/{region}/{alternative}"),
                         originals[region] if region < len(originals) else "")
                  for alternative, candidate in enumerate(draft.candidates)),
            draft.final, draft.forward_passes, draft.generated_tokens,
        )
        for region, draft in enumerate(drafts)
    )


def _noisy(candidate: Candidate, rng: random.Random, original: str) -> Candidate:
    def glyphs(count: int) -> str:
        return "".join(rng.choice(GLYPHS) for _ in range(count))

    tokens = [
        token if token.text or token.accepted else TokenState(glyphs(rng.randint(1, 3)), token.confidence, False)
        for token in candidate.tokens
    ]
    if original:
        tokens = _at_most_lines(tokens, original.count("\n"))
    text = "".join(token.text for token in tokens)
    missing = original.count("\n") - text.count("\n")
    if missing > 0:
        for line in original.split("\n")[-missing:]:
            content = line.lstrip()
            tokens.append(TokenState("\n" + line[: len(line) - len(content)] + glyphs(len(content)), 0.0, False))
    if tokens == list(candidate.tokens):
        return candidate
    return Candidate("".join(token.text for token in tokens), tuple(tokens))


def _at_most_lines(tokens: list[TokenState], breaks: int) -> list[TokenState]:
    """``tokens`` with every line break after the first ``breaks`` shown as a space."""
    shown = []
    for token in tokens:
        if "\n" in token.text and token.text.count("\n") > breaks:
            head, *rest = token.text.split("\n")
            kept, folded = rest[:breaks], rest[breaks:]
            token = TokenState("\n".join([head, *kept]) + " " + " ".join(folded), token.confidence, token.accepted)
        breaks -= min(breaks, token.text.count("\n"))
        shown.append(token)
    return shown
