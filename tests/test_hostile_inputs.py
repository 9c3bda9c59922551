"""Bad input found by the reliability audit (docs/bad-inputs.md, #94 on): a server that quotes the
API key in what it sends. Each gets one clear line; nothing crashes, and no secret is shown."""

from __future__ import annotations

import pytest

from sfumato.model.api import EngineError, InfillRequest
from sfumato.model.remote.backend import RemoteOptions, connect
from remote_servers import chat_chunk, stream_reply

KEY = "sk-secret-abcdefghijklmnopqrstuvwxyz"


# ---- a server that quotes the key ------------------------------------------------------------


def _refusal(connect_and_run) -> str:
    with pytest.raises(EngineError) as caught:
        connect_and_run()
    return str(caught.value)


@pytest.mark.parametrize("answer", [
    # (where the answer goes, how it is sent): the key is quoted in it, never in whole where a message clips it
    pytest.param(("GET", "/v1/models", lambda h: h.send_raw(200, "text/plain", f"token {KEY} is not valid".encode())),
                 id="a 200 answer that is not JSON"),
    pytest.param(("GET", "/v1/models", lambda h: h.send_json(401, {"error": {"message": "x" * 140 + f" key={KEY}"}})),
                 id="an error message that the clip cuts inside the key"),
    pytest.param(("POST", "/v1/chat/completions", stream_reply([chat_chunk("a"), f"{{bad json {KEY}"])),
                 id="a malformed event"),
    pytest.param(("POST", "/v1/chat/completions", stream_reply([{"error": {"message": "y" * 130 + f" for key {KEY}"}}])),
                 id="an error event that the clip cuts inside the key"),
])
def test_no_part_of_the_key_a_server_quotes_reaches_a_message(replay_server, answer):
    method, path, reply = answer
    replay_server.replies[(method, path)] = reply
    options = RemoteOptions(api_key=KEY)
    message = _refusal(lambda: list(connect(replay_server.url, options).stream([InfillRequest(prefix="a", max_new_tokens=8)])))
    assert f"127.0.0.1:{replay_server.port}" in message
    assert KEY[:8] not in message, message  # not even the part before a clip's "…"


def test_a_model_list_with_odd_names_is_one_clipped_line(replay_server):
    names = [{"id": f"model-{i}\nInjected line " + "z" * 500} for i in range(5)]
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_json(200, {"data": names})
    message = _refusal(lambda: connect(replay_server.url, RemoteOptions(model="wanted")))
    assert "does not serve 'wanted'" in message and "\n" not in message and len(message) < 400
