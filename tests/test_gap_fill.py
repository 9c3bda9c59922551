"""A template's gaps run a bounded number at a time, as one stream the editor draws."""

from __future__ import annotations

from sfumato.model import gap_fill
from sfumato.model.api import Candidate, Draft, InfillRequest, TemplateRequest, TokenState


class Recording:
    """A backend whose ``stream`` writes each request's max_new_tokens as its text, in two passes."""

    def __init__(self):
        self.batches: list[int] = []

    def stream(self, requests, cancel=None):
        self.batches.append(len(requests))
        for passes in (1, 2):
            final = passes == 2
            yield tuple(Draft(batch_passes=passes, final=final,
                              candidates=(Candidate(text := str(r.max_new_tokens) * passes, (TokenState(text, 1.0, final),)),))
                        for r in requests)


def test_a_template_with_many_gaps_runs_them_a_group_at_a_time_and_every_draft_has_each_gap():
    backend, gaps = Recording(), 2 * gap_fill.REQUESTS_AT_ONCE + 3
    template = TemplateRequest(segments=tuple(f"s{i} " for i in range(gaps + 1)), max_new_tokens=tuple(range(1, gaps + 1)))
    steps = list(gap_fill.fill_gaps_separately(backend, template))
    assert backend.batches == [gap_fill.REQUESTS_AT_ONCE, gap_fill.REQUESTS_AT_ONCE, 3]
    assert all(len(drafts) == gaps for drafts in steps)
    assert [d.text for d in steps[-1]] == [str(n) * 2 for n in range(1, gaps + 1)]
    assert all(d.final for d in steps[-1]) and not any(d.final for drafts in steps[:-1] for d in drafts)
    assert [drafts[0].batch_passes for drafts in steps] == [1, 2, 3, 4, 5, 6]  # progress counts on
    first = steps[0]  # the first group's first pass: the others wait, empty
    assert [d.text for d in first[: gap_fill.REQUESTS_AT_ONCE]] == [str(n) for n in range(1, gap_fill.REQUESTS_AT_ONCE + 1)]
    assert {d.text for d in first[gap_fill.REQUESTS_AT_ONCE :]} == {""}
    assert steps[2][0].text == "11"  # a group done keeps its texts while the next runs


def test_few_gaps_are_one_batch():
    backend = Recording()
    requests = [InfillRequest(max_new_tokens=n) for n in (1, 2, 3)]
    assert [d.text for d in list(gap_fill.in_groups(backend.stream, 3, requests.__getitem__))[-1]] == ["11", "22", "33"]
    assert backend.batches == [3]
