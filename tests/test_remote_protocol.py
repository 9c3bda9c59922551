"""The remote backend against scripted loopback servers: protocols, fallbacks and every bad server.

The draft-stream protocol (Mercury's ``"diffusing": true``) and vLLM's extras have no local real
server; the replaying server sends chunks of the recorded shapes instead.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from sfumato.model.api import CancelFlag, Cancelled, EngineError, InfillRequest
from sfumato.model.loading import load_backend
from sfumato.model.remote.backend import RemoteOptions, connect
from remote_servers import BAD_SERVERS, CHAT, REPO_ROOT, chat_chunk, free_port, stream_reply

# stream_options asks for the server's token count in a last chunk (OpenAI's, vLLM's, llama.cpp's, transformers')
ALLOWED_KEYS = {"model", "messages", "prompt", "max_tokens", "stream", "stream_options", "diffusing", "vllm_xargs"}
REQUEST = InfillRequest(prefix="def area(w, h):\n    return ", suffix="\n\nprint(area(2, 3))\n", max_new_tokens=16)


def final_text(backend, request=REQUEST) -> str:
    return list(backend.stream([request]))[-1][0].text


def completion_chunk(text: str, finish: str | None = None) -> dict:
    return {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": finish}]}


# ---- what is sent ------------------------------------------------------------------------------


def test_chat_requests_carry_the_engines_prompt_and_no_parameter_servers_refuse(replay_server):
    replay_server.replies[CHAT] = stream_reply([chat_chunk("w * h"), chat_chunk(None, "stop")])
    backend = connect(replay_server.url)
    assert final_text(backend) == "w * h"
    (body,) = replay_server.posts("/v1/chat/completions")
    assert set(body) <= ALLOWED_KEYS and "suffix" not in body and "temperature" not in body and "seed" not in body
    assert body["model"] == "replay-model" and body["stream"] is True and body["max_tokens"] == 16
    assert body["stream_options"] == {"include_usage": True}
    content = body["messages"][0]["content"]
    assert "<REGION>" in content and REQUEST.prefix in content and REQUEST.suffix in content


def test_the_api_key_goes_in_the_authorization_header(replay_server, monkeypatch):
    monkeypatch.setenv("SFUMATO_API_KEY", "sk-test-123")
    replay_server.replies[CHAT] = stream_reply([chat_chunk("x", "stop")])
    final_text(connect(replay_server.url))
    assert {headers.get("Authorization") for _, _, _, headers in replay_server.requests} == {"Bearer sk-test-123"}


def test_the_api_key_never_goes_over_plain_http_to_another_machine(replay_server, monkeypatch):
    import sfumato.model.remote.connection as connection

    monkeypatch.setenv("SFUMATO_API_KEY", "sk-test-123")
    monkeypatch.setattr(connection, "peer_kind", lambda address: "private")  # as if 127.0.0.1 were a LAN box
    with pytest.raises(EngineError, match=r"never sent over plain http to 127\.0\.0\.1:\d+ \(127\.0\.0\.1 is not this machine\)"):
        connect(replay_server.url)
    assert replay_server.requests == []  # not one byte of a request: refused once connected
    monkeypatch.delenv("SFUMATO_API_KEY")
    assert connect(replay_server.url).profile.model == "replay-model"  # without a key it may go


def test_an_address_the_user_did_not_allow_is_refused_once_connected(replay_server, monkeypatch):
    """A name that resolved to this machine when the user was asked, and to another one when the
    connection is made, gets not one byte: the address actually connected to is classified."""
    import sfumato.model.remote.connection as connection

    allowed = []
    options = RemoteOptions(admits=lambda kind: allowed.append(kind) or kind == "loopback")
    monkeypatch.setattr(connection, "peer_kind", lambda address: "public")  # as if it resolved elsewhere this time
    with pytest.raises(EngineError, match=r"127\.0\.0\.1:\d+ is at 127\.0\.0\.1 now, on the internet, where you have not allowed"):
        connect(replay_server.url, options)
    assert replay_server.requests == [] and allowed == ["public"]
    monkeypatch.setattr(connection, "peer_kind", lambda address: "loopback")
    assert connect(replay_server.url, options).profile.model == "replay-model"


def test_a_key_with_whitespace_around_it_is_sent_stripped(replay_server, monkeypatch):
    monkeypatch.setenv("SFUMATO_API_KEY", " sk-test-123 \r\n")
    replay_server.replies[CHAT] = stream_reply([chat_chunk("x", "stop")])
    final_text(connect(replay_server.url))
    assert {headers.get("Authorization") for _, _, _, headers in replay_server.requests} == {"Bearer sk-test-123"}


@pytest.mark.parametrize("key", ["sk-test\n123", "sk-test 123", "sk-test\x7f123", "sk-tëst-123"])
def test_a_key_a_header_cannot_carry_is_refused_without_being_shown(replay_server, monkeypatch, key):
    monkeypatch.setenv("SFUMATO_API_KEY", key)
    with pytest.raises(EngineError) as caught:
        connect(replay_server.url)
    assert "sk-t" not in str(caught.value) and "API key" in str(caught.value)
    assert replay_server.requests == []


def test_no_message_quotes_the_key_a_header_value_or_the_urls_password(replay_server):
    from sfumato.model.remote.connection import Connection

    with pytest.raises(EngineError) as caught:  # a key that escaped cleaning: httpx's text quotes the header
        Connection(replay_server.url, "sk-secret\nInjected: 1").get_json("models")
    assert "sk-secret" not in str(caught.value) and "header value is not valid" in str(caught.value)

    def echo(handler):  # servers echo what they refuse
        handler.send_json(401, {"error": {"message": f"Incorrect key: {handler.headers.get('Authorization')}"}})

    replay_server.replies[("GET", "/v1/models")] = echo
    with pytest.raises(EngineError) as caught:
        connect(replay_server.url, RemoteOptions(api_key="sk-secret-456"))
    assert "sk-secret-456" not in str(caught.value) and "Incorrect key: Bearer ***" in str(caught.value)
    password_url = replay_server.url.replace("http://", "http://bob:pa55word@")
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_json(500, {"detail": f"bad {password_url}"})
    for attempt in (lambda: connect(password_url), lambda: load_backend(password_url + "/x")):
        with pytest.raises(EngineError) as caught:
            attempt()
        assert "pa55word" not in str(caught.value)


def test_fim_tokens_found_through_tokenize_give_a_fim_prompt_on_completions(replay_server):
    replay_server.replies[("POST", "/tokenize")] = lambda h: h.send_json(200, {"tokens": [4, 5, 6], "count": 3})
    replay_server.replies[("POST", "/v1/completions")] = stream_reply([completion_chunk("w * h"), completion_chunk("", "stop")], done=False)
    backend = connect(replay_server.url)
    assert backend.profile.fim == ("<fim_prefix>", "<fim_suffix>", "<fim_middle>")
    assert final_text(backend) == "w * h"  # a stream ended by finish_reason without [DONE] is complete
    (body,) = replay_server.posts("/v1/completions")
    assert body["prompt"] == f"<fim_prefix>{REQUEST.prefix}<fim_suffix>{REQUEST.suffix}<fim_middle>"
    assert set(body) <= ALLOWED_KEYS


def test_a_server_without_a_chat_template_falls_back_to_prefix_completions_once(replay_server):
    replay_server.replies[CHAT] = lambda h: h.send_json(400, {"detail": "Cannot use chat template functions: no chat template"})
    replay_server.replies[("POST", "/v1/completions")] = stream_reply([completion_chunk("w * h", "stop")])
    backend = connect(replay_server.url)
    assert final_text(backend) == "w * h"
    assert final_text(backend) == "w * h"
    assert len(replay_server.posts("/v1/chat/completions")) == 1  # learned once
    assert [body["prompt"] for body in replay_server.posts("/v1/completions")] == [REQUEST.prefix] * 2


def test_a_bare_500_on_chat_falls_back_to_completions_once(replay_server):
    """``transformers serve`` of a base model (no chat template) answers chat with a bare 500."""
    replay_server.replies[CHAT] = lambda h: h.send_raw(500, "text/plain; charset=utf-8", b"Internal Server Error")
    replay_server.replies[("POST", "/v1/completions")] = stream_reply([completion_chunk("w * h", "stop")])
    backend = connect(replay_server.url)
    assert final_text(backend) == "w * h" and final_text(backend) == "w * h"
    assert len(replay_server.posts("/v1/chat/completions")) == 1 and not backend.profile.chat
    assert [body["prompt"] for body in replay_server.posts("/v1/completions")] == [REQUEST.prefix] * 2


def test_when_the_completions_fallback_fails_too_both_server_messages_are_shown_clipped(replay_server):
    replay_server.replies[CHAT] = lambda h: h.send_raw(500, "text/plain; charset=utf-8", b"Internal Server Error")
    replay_server.replies[("POST", "/v1/completions")] = lambda h: h.send_json(500, {"detail": "model crashed: " + "x" * 400})
    backend = connect(replay_server.url)
    with pytest.raises(EngineError) as caught:
        final_text(backend)
    message = str(caught.value)
    assert "failed (HTTP 500: Internal Server Error)" in message and "/v1/completions failed too (HTTP 500: model crashed: xxx" in message
    assert message.endswith("…)") and len(message) < 320 and "\n" not in message
    assert backend.profile.chat  # not known to be chat's fault: the next request asks chat again
    with pytest.raises(EngineError):
        final_text(backend)
    assert len(replay_server.posts("/v1/chat/completions")) == 2


def test_a_server_error_that_gives_its_reason_is_shown_and_not_sent_elsewhere(replay_server):
    replay_server.replies[CHAT] = lambda h: h.send_json(500, {"detail": "CUDA out of memory"})
    with pytest.raises(EngineError, match="HTTP 500: CUDA out of memory"):
        final_text(connect(replay_server.url))
    assert replay_server.posts("/v1/completions") == []


def test_vllm_extras_are_sent_to_vllm_and_dropped_for_good_when_refused(replay_server):
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_json(200, {"data": [{"id": "dg", "owned_by": "vllm"}]})

    def chat(handler):
        body = replay_server.posts("/v1/chat/completions")[-1]
        if "vllm_xargs" in body:
            handler.send_json(400, {"error": {"message": "Unknown extra argument diffusion_max_steps"}})
        else:
            stream_reply([chat_chunk("ok", "stop")])(handler)

    replay_server.replies[CHAT] = chat
    backend = connect(replay_server.url)
    request = InfillRequest(prefix="a", max_new_tokens=4, steps=12)
    assert backend.profile.extras
    assert final_text(backend, request) == "ok" and final_text(backend, request) == "ok"
    sent = replay_server.posts("/v1/chat/completions")
    assert sent[0]["vllm_xargs"] == {"diffusion_max_steps": 12}
    assert [("vllm_xargs" in body) for body in sent] == [True, False, False]
    assert not backend.profile.extras


def test_a_rewrite_on_vllm_seeds_the_canvas_with_the_selections_tokens_and_pins_the_kept_ones(replay_server):
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_json(200, {"data": [{"id": "dg", "owned_by": "vllm"}]})
    ids = {"w * h": [11, 12, 13, 14], "<eos>": [1], "<pad>": [0]}  # FIM markers: several tokens, so no FIM

    def tokenize(handler):
        text = replay_server.posts("/tokenize")[-1]["prompt"]
        handler.send_json(200, {"tokens": ids.get(text, [7, 8, 9, 10, 11])})

    replay_server.replies[("POST", "/tokenize")] = tokenize
    replay_server.replies[CHAT] = stream_reply([chat_chunk("w*h", "stop")])
    backend = connect(replay_server.url, RemoteOptions(canvas_length=8))
    final_text(backend, InfillRequest(prefix="a", init_text="w * h", strength=0.5, seed=3))
    extras = replay_server.posts("/v1/chat/completions")[0]["vllm_xargs"]
    assert extras["diffusion_seed_canvas"] == [11, 12, 13, 14, 1, 0, 0, 0]  # exactly canvas_length ids
    pinned = extras["diffusion_pinned"]
    assert len(pinned) == 2 and set(pinned) <= {0, 1, 2, 3}  # half the selection, never EOS or padding


# ---- draft streams -----------------------------------------------------------------------------


def test_a_draft_stream_replaces_the_text_with_each_chunk_and_marks_what_changed(replay_server):
    drafts = ["q# x1 zz", "w * x1 z", "w * h", "w * h"]  # recorded shape: each chunk the whole draft
    replay_server.replies[CHAT] = stream_reply([chat_chunk(text) for text in drafts] + [chat_chunk(None, "stop")])
    backend = connect(replay_server.url, RemoteOptions(draft_stream=True))
    batches = [batch[0] for batch in backend.stream([REQUEST])]
    assert replay_server.posts("/v1/chat/completions")[0]["diffusing"] is True
    assert [draft.text for draft in batches[:-1]] == drafts
    second = batches[1].tokens
    assert [token.text for token in second] == ["w", " ", "*", " ", "x1", " ", "z"]
    assert [token.accepted for token in second] == [False, False, False, True, True, True, False]
    assert batches[-1].final and batches[-1].text == "w * h" and all(t.accepted for t in batches[-1].tokens)


def test_a_canvas_chunk_server_accumulates_chunks(replay_server):
    replay_server.replies[CHAT] = stream_reply([chat_chunk("w "), chat_chunk("* h"), chat_chunk(None, "stop")])
    backend = connect(replay_server.url)
    assert [batch[0].text for batch in backend.stream([REQUEST])] == ["w ", "w * h", "w * h"]


# ---- connection life -----------------------------------------------------------------------------


def test_a_connection_dropped_before_the_first_byte_is_retried_once(replay_server):
    attempts = []

    def flaky(handler):
        attempts.append(1)
        if len(attempts) == 1:
            handler.connection.shutdown(socket.SHUT_RDWR)
        else:
            stream_reply([chat_chunk("ok", "stop")])(handler)

    replay_server.replies[CHAT] = flaky
    assert final_text(connect(replay_server.url)) == "ok"
    assert len(attempts) == 2


def test_a_drop_after_part_of_the_answer_never_sends_the_document_again(replay_server):
    attempts = []

    def partial_headers(handler):
        attempts.append(1)
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Ty")
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)

    replay_server.replies[CHAT] = partial_headers
    with pytest.raises(EngineError, match="broke before the answer was complete"):
        final_text(connect(replay_server.url))
    assert len(attempts) == 1


def test_a_server_dripping_bytes_is_stopped_by_the_total_deadline(replay_server):
    from sfumato.model.remote.connection import Timeouts

    def drip(handler):
        handler.start_events()
        for _ in range(40):
            handler.wfile.write(b":")  # a comment byte: never an event, never a read timeout
            handler.wfile.flush()
            time.sleep(0.25)

    replay_server.replies[CHAT] = drip
    backend = connect(replay_server.url, RemoteOptions(timeouts=Timeouts(read=5, total=1.5)))
    began = time.monotonic()
    with pytest.raises(EngineError, match=r"took more than 1\.5 s for one answer; gave up"):
        final_text(backend)
    assert time.monotonic() - began < 5


def test_a_compressed_answer_is_refused_unread_and_identity_is_asked_for(replay_server):
    import gzip

    bomb = gzip.compress(gzip.compress(b"\0" * (200 << 20)))  # 200 MB of zeros in a few hundred bytes
    replay_server.replies[CHAT] = lambda h: h.send_raw(200, "application/json", bomb, {"Content-Encoding": "gzip, gzip"})
    with pytest.raises(EngineError, match=r"compressed its answer \(gzip, gzip\) although asked not to"):
        final_text(connect(replay_server.url))
    assert {headers.get("Accept-Encoding") for _, _, _, headers in replay_server.requests} == {"identity"}


def test_text_far_longer_than_the_tokens_asked_for_is_refused_even_in_one_long_word(replay_server):
    replay_server.replies[CHAT] = stream_reply([chat_chunk("x" * (512 << 10)), chat_chunk(None, "stop")])
    with pytest.raises(EngineError, match="far more text than the 16 tokens asked for"):
        final_text(connect(replay_server.url))


@pytest.mark.parametrize("headers_first", [True, False])
def test_cancel_ends_a_read_blocked_on_a_stalled_server_and_the_server_sees_it_go(replay_server, headers_first):
    seen_gone = threading.Event()

    def stall(handler):
        if headers_first:
            handler.start_events()
            handler.wfile.flush()
        handler.rfile.read(1)  # blocks until the client closes its side
        seen_gone.set()

    replay_server.replies[CHAT] = stall
    backend = connect(replay_server.url)
    cancel = CancelFlag()
    ended = []

    def run():
        try:
            list(backend.stream([REQUEST], cancel))
        except Cancelled:
            ended.append("cancelled")

    thread = threading.Thread(target=run)
    thread.start()
    while len(replay_server.posts("/v1/chat/completions")) == 0:
        thread.join(0.01)
    cancel.set()
    thread.join(30)
    assert ended == ["cancelled"]
    assert seen_gone.wait(30)


# ---- bad servers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(BAD_SERVERS))
def test_a_bad_server_fails_with_one_clear_line(replay_server, case):
    replies, expected = BAD_SERVERS[case]
    replay_server.replies.update(replies)
    backend = connect(replay_server.url)
    with pytest.raises(EngineError) as failure:
        final_text(backend)
    message = str(failure.value)
    assert expected in message and "\n" not in message and f"127.0.0.1:{replay_server.port}" in message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (lambda port: f"http://127.0.0.1:{port}/v1", "connection refused (is the server running?)"),
        (lambda port: "http://sfumato-test.invalid:8000/v1", "cannot find the server sfumato-test.invalid"),
        (lambda port: f"http://127.0.0.1:{port}", "must end in /v1"),
    ],
    ids=["connection refused", "DNS failure", "not a /v1 URL"],
)
def test_a_server_that_cannot_be_reached_fails_at_load_with_one_line(url, expected):
    with pytest.raises(EngineError, match="^[^\n]*$") as failure:
        load_backend(url(free_port()))
    assert expected in str(failure.value)


def test_a_model_list_that_is_html_or_empty_or_lacks_the_named_model_is_refused(replay_server):
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_raw(200, "text/html", b"<html>login</html>")
    with pytest.raises(EngineError, match="HTML page"):
        connect(replay_server.url)
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_json(200, {"data": []})
    with pytest.raises(EngineError, match="serves no model"):
        connect(replay_server.url)
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_json(200, {"data": [{"id": "a"}]})
    with pytest.raises(EngineError, match=r"does not serve 'b' \(it serves: a\)"):
        connect(replay_server.url, RemoteOptions(model="b"))


def test_an_unverifiable_tls_certificate_is_refused(tls_replay_server):
    with pytest.raises(EngineError, match="TLS certificate of 127.0.0.1:.* could not be verified"):
        load_backend(tls_replay_server.url)


def test_infill_jsonl_gives_an_error_line_per_request_when_the_server_fails(replay_server):
    replay_server.replies[CHAT] = lambda h: h.send_json(503, {"detail": "overloaded"})
    lines = [json.dumps({"id": 1, "prefix": "a"}), json.dumps({"id": 2, "prefix": "b"})]
    run = subprocess.run([sys.executable, "-m", "sfumato.app.cli", "infill", "--jsonl", "--model", replay_server.url, "--batch-size", "1"],
                         input="\n".join(lines), capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 1 and run.stderr == "sfumato: none of the 2 requests was answered (each output line says why)\n"
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert [set(record) for record in records] == [{"id", "error"}] * 2
    assert [record["id"] for record in records] == [1, 2] and "HTTP 503: overloaded" in records[0]["error"]


HOSTILE = {2: "\ud800", 4: "ok\udc80", 5: "\x1b]0;pwned\x07\x1b[31mred\x00\x9b", 6: "abc\u202eevil\u200b"}
CLEANED = {2: "\ufffd", 4: "ok\ufffd", 5: "]0;pwned[31mred", 6: "abc\u202eevil\u200b"}


def test_one_bad_answer_is_one_error_line_and_stdout_is_clean_utf8(replay_server):
    def answer(handler):  # request n gets HOSTILE[n]; request 7's stream is malformed
        prompt = json.dumps(replay_server.requests[-1][2])
        n = next(n for n in range(10) if f"text {n}" in prompt)
        if n == 7:
            return stream_reply(["{not json"])(handler)
        stream_reply([chat_chunk(HOSTILE.get(n, f"answer {n}"), "stop")])(handler)

    replay_server.replies[CHAT] = answer
    lines = [json.dumps({"id": n, "prefix": f"text {n}"}) for n in range(10)]
    run = subprocess.run([sys.executable, "-m", "sfumato.app.cli", "infill", "--jsonl", "--model", replay_server.url],
                         input="\n".join(lines).encode(), capture_output=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    out = run.stdout.decode("utf-8")  # strict: valid UTF-8
    assert not any(char in out for char in "\x1b\x07\x00\x9b\u202e\u200b")  # escaped, never raw
    records = [json.loads(line) for line in out.splitlines()]
    assert [record["id"] for record in records] == list(range(10))
    errors = [record["id"] for record in records if "error" in record]
    assert errors == [7] and "malformed stream" in records[7]["error"]  # the others of its batch still answered
    assert {n: records[n]["text"] for n in CLEANED} == CLEANED


def test_fill_writes_no_control_to_its_file_warns_of_invisible_characters_and_escapes_stderr(replay_server, tmp_path):
    replay_server.replies[CHAT] = stream_reply([chat_chunk("x\x1b[2J\x00\u202ey", "stop")])
    template, out = tmp_path / "t.txt", tmp_path / "out.txt"
    template.write_text("a = [MASK]\n")
    run = subprocess.run([sys.executable, "-m", "sfumato.app.cli", "fill", str(template), "-o", str(out), "--model", replay_server.url],
                         capture_output=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert out.read_text() == "a = x[2J\u202ey\n"
    assert run.stderr.decode() == ("sfumato: the model wrote 1 invisible character (U+202E RIGHT-TO-LEFT OVERRIDE); "
                                   "they are in the output\n")
    replay_server.replies[CHAT] = lambda h: h.send_json(500, {"detail": "\x1b]0;pwned\x07 \u202egnp"})
    run = subprocess.run([sys.executable, "-m", "sfumato.app.cli", "fill", str(template), "--model", replay_server.url],
                         capture_output=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 1 and b"\x1b" not in run.stderr and "\\u202e" in run.stderr.decode()


@pytest.mark.parametrize("raw, expected", [
    ('{"choices": [{"delta": {"content": "x"}, "n": 1' + "0" * 5000 + "}]}", "with a number too large to read as JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested too deep to read as JSON"),
])
def test_huge_numbers_and_deep_nesting_are_one_line_naming_the_server(replay_server, raw, expected):
    replay_server.replies[CHAT] = stream_reply([raw])
    with pytest.raises(EngineError) as caught:
        final_text(connect(replay_server.url))
    message = str(caught.value)
    assert message.startswith(f"127.0.0.1:{replay_server.port} sent a malformed stream (an event {expected}")
    assert "Exceeds the limit" not in message and "recursion" not in message


def test_a_negative_token_count_is_no_count(replay_server):
    usage = {"prompt_tokens": 5, "completion_tokens": -7, "total_tokens": -2}
    replay_server.replies[CHAT] = stream_reply([chat_chunk("w * h"), {**chat_chunk(None, "stop"), "usage": usage}])
    backend = connect(replay_server.url)
    assert final_text(backend) == "w * h"
    assert backend.round_trip.tokens == 5 and not backend.round_trip.tokens_exact  # "w", " ", "*", " ", "h"


def test_a_model_list_request_dropped_twice_fails_with_one_line(replay_server):
    calls = []

    def drop(handler):
        calls.append(1)
        handler.connection.shutdown(socket.SHUT_RDWR)

    replay_server.replies[("GET", "/v1/models")] = drop
    with pytest.raises(EngineError, match="^the connection to 127.0.0.1:[0-9]+ broke before the answer was complete$"):
        connect(replay_server.url)
    assert len(calls) == 2


def test_a_server_that_answers_without_streaming_still_gives_the_result(replay_server):
    answer = {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "w * h"},
              "finish_reason": "stop"}], "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}
    replay_server.replies[CHAT] = lambda h: h.send_json(200, answer)
    backend = connect(replay_server.url)
    final = list(backend.stream([REQUEST]))[-1][0]
    assert final.text == "w * h" and final.generated_tokens == 3
