"""The SSE decoder: events cut anywhere by the network come out whole, in order."""

from __future__ import annotations

import pytest

from sfumato.model.api import EngineError
from sfumato.model.remote.sse import SseDecoder

STREAM = b'data: {"a": 1}\n\n: keep-alive comment\n\nevent: x\ndata: line one\ndata: line two\n\ndata: [DONE]\n\n'
EXPECTED = ['{"a": 1}', "line one\nline two", "[DONE]"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_events_split_at_any_byte_come_out_whole(size):
    decoder, events = SseDecoder(), []
    for start in range(0, len(STREAM), size):
        events += decoder.feed(STREAM[start : start + size])
    assert events == EXPECTED
    assert decoder.close() is None


def test_crlf_and_cr_line_ends_count_like_lf():
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r\n\r\ndata: b\r\rdata:c\n\n") == ["a", "b", "c"]


def test_a_cr_at_the_end_of_a_chunk_waits_for_a_possible_lf():
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r\n") == ["a"]


def test_a_stream_that_ends_without_the_blank_line_still_gives_its_last_event():
    decoder = SseDecoder()
    assert decoder.feed(b'data: {"last": true}') == []
    assert decoder.close() == '{"last": true}'


def test_a_utf8_character_split_between_chunks_is_decoded_once_whole():
    raw = 'data: {"t": "né"}\n\n'.encode()
    cut = raw.index("é".encode()) + 1
    decoder = SseDecoder()
    assert decoder.feed(raw[:cut]) == []
    assert decoder.feed(raw[cut:]) == ['{"t": "né"}']


def test_an_event_larger_than_the_cap_is_refused_even_without_line_ends():
    decoder = SseDecoder(max_event_bytes=1024)
    with pytest.raises(EngineError, match="larger than 1 KiB"):
        decoder.feed(b"data: " + b"x" * 2000)
    decoder = SseDecoder(max_event_bytes=1024)
    with pytest.raises(EngineError, match="larger than 1 KiB"):
        for _ in range(30):
            decoder.feed(b"data: " + b"x" * 60 + b"\n")


def test_a_chunk_of_many_events_is_decoded_in_linear_time():
    """2 MB of 100,000 events in one chunk: each line used to copy the rest of the buffer (minutes)."""
    import time

    chunk = b"".join(b"data: %06d\n\n" % index for index in range(100_000)) + b"data: x" * 100_000 + b"\n\n"
    began = time.monotonic()
    events = SseDecoder(max_event_bytes=8 << 20).feed(chunk)
    assert len(events) == 100_001 and events[1] == "000001" and time.monotonic() - began < 10
