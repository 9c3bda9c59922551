"""Bad input found by the reliability audit (docs/bad-inputs.md, #94 on): a server that quotes the
API key in what it sends, JSON Lines that Python's reader chokes on, model folders whose JSON files
hold the wrong types, file systems that refuse part of a save, damaged recovery copies. Each gets
one clear line; nothing crashes, no secret is shown, no file is left half written."""

from __future__ import annotations

import io
import json
import shutil
import sys

import pytest

from sfumato.model.api import Candidate, Draft, EngineError, InfillRequest, TokenState
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



def test_a_served_models_id_is_shown_as_one_short_safe_line_and_sent_back_whole(replay_server):
    served = "org/model\x1b]0;owned\x07\u202e" + "v" * 500
    replay_server.replies[("GET", "/v1/models")] = lambda h: h.send_json(200, {"data": [{"id": served}]})
    replay_server.replies[("POST", "/v1/chat/completions")] = stream_reply([chat_chunk("x"), chat_chunk(None, "stop")])
    backend = connect(replay_server.url)
    shown = backend.info.name
    assert shown.startswith("org/model") and len(shown) <= 80 and "\x1b" not in shown and "\u202e" not in shown
    list(backend.stream([InfillRequest(prefix="a", max_new_tokens=8)]))
    (body,) = replay_server.posts("/v1/chat/completions")
    assert body["model"] == served  # the server is asked for the model by its own id

# ---- JSON Lines Python's reader chokes on ----------------------------------------------------


class EchoBackend:
    """Answers every request with its prefix, at once."""

    def stream(self, requests, cancel=None):
        yield tuple(Draft(1, (Candidate(r.prefix, (TokenState(r.prefix, 1.0, True),)),), True, forward_passes=1,
                          generated_tokens=1) for r in requests)


def run_infill(monkeypatch, capsys, lines: list[str]) -> tuple[int, list[str], str]:
    from sfumato.app import cli

    monkeypatch.setattr(cli, "_load", lambda args: EchoBackend())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("".join(line + "\n" for line in lines).encode())))
    code = cli.main(["infill", "--jsonl"])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def _strict(name: str):
    pytest.fail(f"{name} in an answer line: no strict JSON reader reads it")


def test_deep_nesting_huge_numbers_and_nan_are_error_lines_and_the_rest_run(monkeypatch, capsys):
    lines = [
        '{"id": 1, "prefix": ' + "[" * 100_000 + "}",  # Python's reader raises RecursionError
        '{"id": 2, "max_new_tokens": ' + "9" * 5000 + "}",  # ValueError: over 4300 digits
        '{"id": NaN, "prefix": "a"}',  # Python reads NaN; a strict JSON reader of the output would not
        '{"id": 4, "strength": Infinity, "init_text": "b"}',
        '{"id": "fine", "prefix": "ok"}',
    ]
    code, out, err = run_infill(monkeypatch, capsys, lines)
    assert code == 0 and err == ""
    records = [json.loads(line, parse_constant=_strict) for line in out]
    assert [record.get("id") for record in records] == [None, None, None, None, "fine"]
    assert records[-1]["text"] == "ok"
    errors = [record["error"] for record in records[:4]]
    assert errors[0] == "not valid JSON (nested too deep)"
    assert errors[1] == "not valid JSON (a number too large)"
    assert errors[2] == errors[3] == "not valid JSON (NaN and Infinity are not JSON)"


# ---- model folders whose JSON files hold the wrong types -------------------------------------


def _load_error(folder) -> str:
    from sfumato.model.loading import load_backend

    with pytest.raises(EngineError) as caught:
        load_backend(str(folder), device="cpu")
    message = str(caught.value)
    assert str(folder) in message and "\n" not in message
    return message


@pytest.mark.parametrize(("config", "expected"), [
    ([], "config.json must hold a JSON object"),
    ("a string", "config.json must hold a JSON object"),
    ({"architectures": [5]}, "config.json: 'architectures' must be a list of names"),
    ({"architectures": "BertForMaskedLM"}, "config.json: 'architectures' must be a list of names"),
    ({"architectures": 5}, "config.json: 'architectures' must be a list of names"),
    ({"architectures": [{"a": 1}]}, "config.json: 'architectures' must be a list of names"),
    ({"model_type": ["bert"]}, "config.json: 'model_type' must be a name"),
])
def test_a_config_of_the_wrong_shape_is_one_line(tmp_path, config, expected):
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert expected in _load_error(tmp_path)


@pytest.mark.parametrize("where", ["text_config", "vision_config"])
def test_a_config_that_asks_for_a_trillion_layers_is_refused_before_anything_is_built(tmp_path, tiny_model_dir, where):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config.setdefault(where, {})["num_hidden_layers"] = 10**12  # building it, even without storage, never ends
    (folder / "config.json").write_text(json.dumps(config))
    assert f"config.json: {where}.num_hidden_layers is 1000000000000" in _load_error(folder)


@pytest.mark.parametrize(("profile", "expected"), [
    ([1, 2], "must hold a JSON object"),
    ({"context_tokens": "lots"}, "context_tokens must be a whole number of at least 1"),
    ({"context_tokens": 0}, "context_tokens must be a whole number of at least 1"),
    ({"prompt_layout": "weird"}, "prompt_layout must be fim or chat"),
    ({"canvas_noise": 3}, "canvas_noise must be uniform or mask"),
    ({"joint_gaps": "yes"}, "joint_gaps must be true or false"),
])
def test_a_profile_of_the_wrong_shape_is_refused_when_loading_not_at_the_first_request(tmp_path, tiny_model_dir, profile, expected):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "sfumato.json").write_text(json.dumps(profile))
    assert expected in _load_error(folder)


# ---- saving where the file system refuses part of it -----------------------------------------


def test_a_folder_that_cannot_be_synced_after_the_rename_does_not_fail_the_save(tmp_path, monkeypatch):
    import os
    import stat

    from sfumato.app import fileio

    path = tmp_path / "notes.txt"
    path.write_text("old\n")
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(22, "Invalid argument")  # as some network and FUSE file systems answer
        real_fsync(fd)

    monkeypatch.setattr(fileio.os, "fsync", fsync)
    fileio.write_text(str(path), "new\n", fileio.TextFormat())  # the file is replaced: the save succeeded
    assert path.read_text() == "new\n" and os.listdir(tmp_path) == ["notes.txt"]


def test_a_full_disk_fails_a_save_in_place_before_the_file_is_touched(tmp_path, monkeypatch):
    import errno
    import os

    from sfumato.app import fileio

    path, link = tmp_path / "a.txt", tmp_path / "b.txt"
    path.write_text("the saved text\n")
    os.link(path, link)  # a second name: the save writes in place, where a half-written file stays half-written

    def full(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "posix_fallocate", full)
    with pytest.raises(OSError) as caught:
        fileio.write_text(str(path), "a longer text that needs more blocks\n" * 100, fileio.TextFormat())
    assert caught.value.errno == errno.ENOSPC
    assert path.read_text() == link.read_text() == "the saved text\n"


# ---- recovery copies with a damaged header ---------------------------------------------------


@pytest.mark.parametrize("damage", [
    {"disk_stamp": 5}, {"disk_stamp": ["a", "b"]}, {"encoding": "no-such-codec"}, {"encoding": 7},
    {"newline": "x"}, {"name": None}, {"path": 3},
])
def test_a_copy_whose_header_is_damaged_is_left_alone_and_the_others_are_offered(tmp_path, damage):
    from sfumato.app import recovery

    def copy(text: str, **changes) -> bytes:
        header = {"version": recovery.FORMAT_VERSION, "path": None, "name": "Untitled 1", "encoding": "utf-8",
                  "bom": False, "newline": "\n", "disk_stamp": None, **changes}
        return json.dumps(header).encode() + b"\n" + text.encode()

    folder = tmp_path / "recovery" / "1-dead"
    folder.mkdir(parents=True)
    (folder / "1.recovery").write_bytes(copy("damaged", **damage))
    (folder / "2.recovery").write_bytes(copy("the user's text"))
    (orphan,) = recovery.find_orphans(tmp_path / "recovery")  # before: TypeError, or a tab that could not save
    assert [document.text for document in orphan.documents] == ["the user's text"]
    orphan.keep()
    assert (folder / "1.recovery").exists()
