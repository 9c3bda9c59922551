"""Noise drawn as noise: the positions of a passing draft that are still undecided show glyphs.

An absorbing-mask model leaves a position it has not decided as its mask token, which has no
text, so the draft would show nothing there (and the lines would collapse). For display only,
each such position gets one to three glyphs from ``GLYPHS``, picked by a generator seeded with
the pass, the region and the alternative: the same pass always looks the same, the next one
differs. The app cannot see the model's vocabulary (the engine API carries text only), so the
glyphs are the letters, digits and punctuation code is made of. A region with such noise also
keeps at least its original number of lines (blank noise lines at its end), so the text below
it does not jump as line breaks settle. Results (``final`` drafts) are never changed.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence

from model.api import Candidate, Draft, TokenState

GLYPHS = string.ascii_letters + string.digits + "_.,:;=+-*/()[]{}<>#'\""


def with_noise(drafts: Sequence[Draft], originals: Sequence[str]) -> tuple[Draft, ...]:
    """``drafts`` (one per region, the region's original text in ``originals``) as they are shown;
    as many drafts as came in, so a wrong count still shows as one."""
    return tuple(
        draft if draft.final else Draft(
            draft.step,
            tuple(_noisy(candidate, random.Random(f"{draft.step}/{region}/{alternative}"),
                         originals[region] if region < len(originals) else "")
                  for alternative, candidate in enumerate(draft.candidates)),
            draft.final, draft.forward_passes, draft.generated_tokens,
        )
        for region, draft in enumerate(drafts)
    )


def _noisy(candidate: Candidate, rng: random.Random, original: str) -> Candidate:
    tokens = [
        token if token.text or token.accepted else
        TokenState("".join(rng.choice(GLYPHS) for _ in range(rng.randint(1, 3))), token.confidence, False)
        for token in candidate.tokens
    ]
    if tokens == list(candidate.tokens):
        return candidate
    text = "".join(token.text for token in tokens)
    missing_lines = original.count("\n") - text.count("\n")
    if missing_lines > 0:
        tokens.append(TokenState("\n" * missing_lines, 0.0, False))
        text += "\n" * missing_lines
    return Candidate(text, tuple(tokens))
