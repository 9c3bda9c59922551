"""The status bar's line about a model run: its progress and speed while drafts arrive, and the
result's speed once it is in."""

from __future__ import annotations

from sfumato.model.api import Draft
from sfumato.model.untrusted_text import invisible_report


def speed(drafts: tuple[Draft, ...], seconds: float) -> str:
    """Tokens per second (a tenth under 10: a slow run is no "0 tokens/s"); tokens per pass too
    where the backend counts passes (a server does not) and its passes wrote something."""
    draft = drafts[0]
    generated = sum(d.generated_tokens for d in drafts)
    per_pass = f"{draft.tokens_per_pass:.1f} tokens/pass · " if draft.forward_passes and draft.generated_tokens else ""
    rate = generated / max(seconds, 1e-6)
    return f"{per_pass}{rate:.0f} tokens/s" if rate >= 10 or not generated else f"{per_pass}{rate:.1f} tokens/s"


def passing_line(drafts: tuple[Draft, ...], seconds: float, total_steps: int | None) -> str:
    """While the run goes on: the pass (of how many, when known) and the speed so far."""
    passes = drafts[0].batch_passes
    progress = f"Pass {passes}{f'/{total_steps}' if total_steps else ''}" if passes else "Receiving"
    return f"{progress} · {speed(drafts, seconds)}"


def result_line(drafts: tuple[Draft, ...], seconds: float, choices: str, low_confidence: bool = False,
                broken: str | None = None) -> str:
    """The result is shown: whether the model was not confident of it (review it before Tab), the
    user's choices and, last, how fast it was written (a narrow window cuts the line's end); first
    a warning when the result holds invisible characters (bidi controls, zero-width) or leaves the
    file failing to parse (``broken``: the parser's message, ``app/syntax_check.py``)."""
    invisible = invisible_report("".join(draft.text for draft in drafts))
    careful = f"Careful: the result holds {invisible} · " if invisible else ""
    careful += broken_note(broken)
    unsure = "Low confidence: check it · " if low_confidence else ""
    return f"{careful}{unsure}{choices} · {speed(drafts, seconds)}"


def broken_note(broken: str | None) -> str:
    """The warning for a result that leaves the file failing to parse, or nothing."""
    return f"Careful: with this the file no longer parses ({broken}) · " if broken else ""
