"""Template filling for backends that cannot denoise several gaps in one sequence.

Each gap becomes its own ``InfillRequest`` whose prefix and suffix are the whole template around
it, the other gaps left blank, and the requests run as batches through ``backend.stream``; so
gaps are filled in parallel but do not see each other's fills. A batch holds at most
``REQUESTS_AT_ONCE`` gaps (``in_groups``): each gap's row keeps its own prompt's cache, so a template's
memory grew with its gaps (5,000 gaps on the embedded model: 5.7 GB after 5 minutes, and growing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from sfumato.model.api import Backend, CancelFlag, Candidate, Draft, InfillRequest, TemplateRequest

# A template's gaps, or the regions of one edit (a cursor each), denoised as one batch; the later
# ones wait their turn. Each row holds its own prompt's cache: 2,000 regions of one pass took 8 GB.
REQUESTS_AT_ONCE = 8


def gap_request(template: TemplateRequest, gap: int) -> InfillRequest:
    """Gap ``gap``'s infill request, with the text around it: the gap asks for text, never none."""
    segments = template.segments
    return InfillRequest(prefix="".join(segments[: gap + 1]), suffix="".join(segments[gap + 1 :]),
                         max_new_tokens=template.max_new_tokens[gap], steps=template.steps, seed=template.seed,
                         must_write=True, file_name=template.file_name)


def fill_gaps_separately(
    backend: Backend, template: TemplateRequest, cancel: CancelFlag | None = None
) -> Iterator[tuple[Draft, ...]]:
    """``stream_template`` through ``stream``: one draft per gap after every pass."""
    return in_groups(backend.stream, len(template.max_new_tokens), lambda gap: gap_request(template, gap), cancel)


def in_groups(stream: Callable[..., Iterator[tuple[Draft, ...]]], count: int, request_at: Callable[[int], InfillRequest],
              cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
    """``stream(requests, cancel)`` for ``count`` requests (``request_at(i)``, each made when its
    group starts: a gap's holds the whole template around it), ``REQUESTS_AT_ONCE`` at a time,
    as one stream: after every pass a draft for each request (a group's last drafts once it is
    done, an empty one for a request not started yet); ``batch_passes`` counts on across groups,
    and only the last tuple is final."""
    waiting = Draft(batch_passes=0, candidates=(Candidate("", ()),))
    drafts, offset = [waiting] * count, 0
    for start in range(0, count, REQUESTS_AT_ONCE):
        group, passes = [request_at(i) for i in range(start, min(count, start + REQUESTS_AT_ONCE))], 0
        last = start + len(group) == count
        for group_drafts in stream(group, cancel):
            passes = max(draft.batch_passes for draft in group_drafts)
            drafts[start : start + len(group)] = group_drafts
            final = last and all(draft.final for draft in group_drafts)
            yield tuple(replace(draft, batch_passes=offset + passes, final=final) for draft in drafts)
        offset += passes
