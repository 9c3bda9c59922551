"""The region prompt shared by the in-process engine and the remote backend."""

from __future__ import annotations

from sfumato.model.api import InfillRequest
from sfumato.model.region_prompt import character_budgets, context_window, region_message


def test_a_short_document_is_sent_whole_with_the_region_marked():
    request = InfillRequest(prefix="a = ", suffix="\nb = 2\n", init_text="1", instruction="make it 3")
    message = region_message(request, 4096)
    assert "Document:\na = <REGION>\nb = 2\n" in message
    assert "The region currently contains:\n1" in message and message.endswith("Instruction: make it 3")


def test_a_long_document_keeps_the_text_nearest_the_region_within_the_budgets():
    before, after = character_budgets(100)
    request = InfillRequest(prefix="p" * 1000 + "NEAR", suffix="FAR" + "s" * 1000)
    prefix, suffix = context_window(request, 100)
    assert prefix.endswith("NEAR") and len(prefix) <= before
    assert suffix.startswith("FAR") and len(suffix) == after


def test_typing_at_the_cursor_keeps_the_start_of_the_sent_prefix():
    starts = set()
    for typed in range(5):
        prefix, _ = context_window(InfillRequest(prefix="x" * 500 + "".join(map(str, range(500))) + "y" * typed), 100)
        starts.add(prefix[:20])
    assert len(starts) == 1
