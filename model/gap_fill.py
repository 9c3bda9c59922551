"""Template filling for backends that cannot denoise several gaps in one sequence.

Each gap becomes its own ``InfillRequest`` whose prefix and suffix are the whole template around
it, the other gaps left blank, and the requests run as one batch through ``backend.stream``; so
gaps are filled in parallel but do not see each other's fills.
"""

from __future__ import annotations

from collections.abc import Iterator

from sfumato.model.api import Backend, CancelFlag, Draft, InfillRequest, TemplateRequest


def gap_requests(template: TemplateRequest) -> list[InfillRequest]:
    """One infill request per gap, with the text around it."""
    segments = template.segments
    return [
        InfillRequest(
            prefix="".join(segments[: gap + 1]),
            suffix="".join(segments[gap + 1 :]),
            max_new_tokens=max_new_tokens,
            steps=template.steps,
            seed=template.seed,
        )
        for gap, max_new_tokens in enumerate(template.max_new_tokens)
    ]


def fill_gaps_separately(
    backend: Backend, template: TemplateRequest, cancel: CancelFlag | None = None
) -> Iterator[tuple[Draft, ...]]:
    """``stream_template`` through ``stream``: one draft per gap after every pass."""
    return backend.stream(gap_requests(template), cancel)
