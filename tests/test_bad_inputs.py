"""Bad inputs: each gets a clear message and loses nothing (the table is docs/bad-inputs.md).

Inputs already covered elsewhere are only referenced in the table; these tests add the rest.
"""

from __future__ import annotations

import codecs
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QMessageBox

from test_app_support import FakeBackend, qasync_loop  # noqa: F401 - fixture

from sfumato.app.cli import main
from sfumato.app.textpositions import document_text
from sfumato.app.mainwindow import MainWindow
from sfumato.model.api import EngineError
from sfumato.model.loading import load_backend

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def window(qtbot, qasync_loop, tmp_path):  # noqa: F811
    window = MainWindow(qasync_loop, QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window.show()
    yield window
    window.tabs.watcher.blockSignals(True)  # files these tests deleted must not mark documents modified again
    for document in window.tabs.documents():  # no "save changes?" prompt
        if document.editor.session is not None:
            document.editor.session.reject()
        document.editor.document().setModified(False)
    window.close()
    window.ai.worker.stop()
    window.deleteLater()


def with_fake_model(window, qtbot) -> FakeBackend:
    backend = FakeBackend()
    window.ai.worker.start(lambda: backend, "fake")
    qtbot.waitUntil(lambda: window.ai.worker.info is not None, timeout=10000)
    return backend


# --- files that open, and save back byte for byte ---------------------------------------------

OPENS = {
    "invalid UTF-8 that is CP1252": b"caf\xe9 cr\xe8me br\xfbl\xe9e\n",
    "UTF-16 BE without BOM": "hello\nworld\n".encode("utf-16-be"),
    "UTF-16 LE without BOM, CJK (opens as CP1252)": "中文字符测试文本".encode("utf-16-le"),
    "UTF-32 LE with BOM": codecs.BOM_UTF32_LE + "x = 'é'\r\n".encode("utf-32-le"),
    "only a BOM": codecs.BOM_UTF8,
    "no-break space, line separator, form feed": "a\u00a0b\u2028c\x0cd\n".encode(),
    "a 100,000-character line": b"x" * 100_000 + b"\n",
}


@pytest.mark.parametrize("name", sorted(OPENS))
def test_odd_files_open_and_save_byte_identically(window, tmp_path, name):
    path = tmp_path / "file.txt"
    path.write_bytes(OPENS[name])
    document = window.tabs.open_path(str(path))
    assert document is not None
    document.save()  # written, as Save does once the text was edited (unedited, Save writes nothing)
    assert path.read_bytes() == OPENS[name]


def test_mixed_line_endings_open_and_save_with_the_most_common_one(window, tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"a\r\nb\nc\r\nd\re\r\n")
    document = window.tabs.open_path(str(path))
    assert document_text(document.editor.document()) == "a\nb\nc\nd\ne\n"
    assert document.format.newline == "\r\n" and "CRLF" in window.format_label.text()
    assert window.tabs.save(document)
    assert path.read_bytes() == b"a\r\nb\nc\r\nd\re\r\n"  # unedited: Save writes nothing
    document.editor.document().setModified(True)  # as after an edit
    assert window.tabs.save(document)
    assert path.read_bytes() == b"a\r\nb\r\nc\r\nd\r\ne\r\n"  # every line kept; the endings are made one


# --- files that are refused, with a message, and nothing opened -------------------------------

def _refused(window, path: str, *fragments: str) -> None:
    before = window.tabs.count()
    assert window.tabs.open_path(path) is None
    assert window.tabs.count() == before
    message = window.notices.box.text()
    assert message.startswith("Cannot open") and all(fragment in message for fragment in fragments), message


REFUSED = {
    "invalid UTF-8, undefined in CP1252": (b"\x81\x8d\x8f\x90\x9d text", "not valid text"),
    "NUL bytes in UTF-8": (b"name = 'x'\x00\x00\n", "NUL"),
    "a U+2029 paragraph separator": ("one\u2029two\n".encode(), "U+2029"),
    "two BOMs (U+FEFF at the start of the text)": (codecs.BOM_UTF8 * 2 + b"text", "U+FEFF"),
    "a single 5 MB line": (b"x = '" + b"a" * (5 << 20) + b"'\n", "a line of 5,242,886 characters"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_files_the_editor_would_mangle_are_refused(window, tmp_path, name):
    data, fragment = REFUSED[name]
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    _refused(window, str(path), fragment, "Nothing was opened")
    assert path.read_bytes() == data


def test_a_100_mb_file_is_refused_at_once(window, tmp_path):
    path = tmp_path / "huge.log"
    with open(path, "wb") as handle:
        handle.truncate(100 << 20)  # the size is checked before a byte is read
    _refused(window, str(path), "100 MB", "up to 64 MB")


def test_a_folder_a_missing_file_and_a_device_are_refused(window, tmp_path):
    _refused(window, str(tmp_path), "is a folder")
    _refused(window, str(tmp_path / "missing.txt"), "No such file")
    _refused(window, "/dev/zero", "not a regular file")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _refused(window, str(fifo), "not a regular file")


# --- saving -----------------------------------------------------------------------------------

def open_and_type(window, qtbot, path: Path, typed: str = "more"):
    document = window.tabs.open_path(str(path))
    cursor = document.editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    document.editor.setTextCursor(cursor)
    qtbot.keyClicks(document.editor, typed)
    return document


def test_a_read_only_file_is_not_replaced_and_the_text_is_kept(window, qtbot, tmp_path):
    path = tmp_path / "locked.txt"
    path.write_text("original\n")
    document = open_and_type(window, qtbot, path)
    path.chmod(0o444)
    assert not window.tabs.save(document)
    assert "read-only" in window.notices.box.text() and "The text is still here" in window.notices.box.text()
    assert path.read_text() == "original\n"
    assert document_text(document.editor.document()) == "original\nmore" and document.is_modified()


def test_a_file_deleted_while_open_is_written_back_on_save(window, qtbot, tmp_path):
    path = tmp_path / "gone.txt"
    path.write_text("keep me\n")
    document = open_and_type(window, qtbot, path)
    path.unlink()
    assert window.tabs.save(document)
    assert path.read_text() == "keep me\nmore"


def test_a_file_whose_folder_vanished_keeps_the_text_with_a_message(window, qtbot, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "notes.txt"
    path.write_text("notes\n")
    document = open_and_type(window, qtbot, path)
    shutil.rmtree(folder)
    assert not window.tabs.save(document)
    assert "No such file or directory" in window.notices.box.text()
    assert document_text(document.editor.document()) == "notes\nmore" and document.is_modified()


def test_saving_through_a_symbolic_link_updates_its_target_and_keeps_the_link(window, qtbot, tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("real\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    document = open_and_type(window, qtbot, link)
    assert window.tabs.save(document)
    assert link.is_symlink() and target.read_text() == "real\nmore"


# --- templates --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "template, message",
    [
        ("a [MASK b MASK] c [MASK:3 d", "No [MASK] gaps"),
        ("x = [MASK:1234567]\n", "No [MASK] gaps"),  # seven digits: not a marker, so plain text
        ("x = [MASK:0]\n", "length 0 is outside 1..1024"),
        ("x = [MASK:99999]\n", "length 99999 is outside 1..1024"),
    ],
)
def test_templates_without_valid_gaps_explain_and_change_nothing(window, qtbot, template, message):
    with_fake_model(window, qtbot)
    document = window.tabs.new_document()
    document.editor.setPlainText(template)
    window.ai.fill_gaps()
    assert document.editor.session is None
    assert message in window.statusBar().currentMessage()
    assert document_text(document.editor.document()) == template


def test_a_nested_marker_fills_the_inner_gap_only(window, qtbot):
    with_fake_model(window, qtbot)
    document = window.tabs.new_document()
    document.editor.setPlainText("v = [MASK[MASK]]\n")
    window.ai.fill_gaps()
    session = document.editor.session
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    assert session.originals == ["[MASK]"]
    session.accept()
    assert document_text(document.editor.document()) == f"v = [MASK{FakeBackend.result(0)}]\n"


# --- selections -------------------------------------------------------------------------------

def test_a_100000_character_selection_rewrites_and_rejects_exactly(window, qtbot):
    backend = with_fake_model(window, qtbot)
    document = window.tabs.new_document()
    text = "head\n" + "".join(f"line {i:06d} é\n" for i in range(8_000)) + "tail\n"
    document.editor.setPlainText(text)
    cursor = document.editor.textCursor()
    cursor.setPosition(5)
    cursor.setPosition(100_005, QTextCursor.MoveMode.KeepAnchor)
    document.editor.setTextCursor(cursor)
    window.ai.starter.rewrite(document.editor)
    session = document.editor.session
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    request = backend.requests[0][0]
    assert len(request.init_text) == 100_000 and len(request.prefix) == 5 and len(request.suffix) <= 6000
    session.reject()
    assert document_text(document.editor.document()) == text
    cursor.setPosition(5)
    cursor.setPosition(100_005, QTextCursor.MoveMode.KeepAnchor)
    document.editor.setTextCursor(cursor)
    session = window.ai.starter.rewrite(document.editor)
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    session.accept()
    assert document_text(document.editor.document()) == text[:5] + FakeBackend.result(0) + text[100_005:]
    document.editor.undo()
    assert document_text(document.editor.document()) == text


class HostileBackend(FakeBackend):
    """Writes ESC/CSI/OSC sequences, C1 controls, NUL, a lone surrogate and a bidi override."""

    @staticmethod
    def result(index: int, alternative: int = 0) -> str:
        return "ok\x1b]0;title\x07\x1b[2J\x00\x9b\ud800 \u202eevil"


def test_a_model_text_with_controls_and_nul_never_reaches_the_document_or_the_file(window, qtbot, tmp_path, monkeypatch):
    window.ai.worker.start(HostileBackend, "hostile")
    qtbot.waitUntil(lambda: window.ai.worker.info is not None, timeout=10000)
    path = tmp_path / "doc.txt"
    path.write_text("before\n")
    document = window.tabs.open_path(str(path))
    cursor = document.editor.textCursor()
    cursor.setPosition(0)
    cursor.setPosition(6, QTextCursor.MoveMode.KeepAnchor)
    document.editor.setTextCursor(cursor)
    window.ai.start(document.editor, lambda: window.ai.starter.rewrite(document.editor, 0.7))
    session = document.editor.session
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    assert window.statusBar().currentMessage().startswith(
        "Careful: the result holds 1 invisible character (U+202E RIGHT-TO-LEFT OVERRIDE) · ")
    session.accept()
    asked, answers = [], [QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes]
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: asked.append(args[2]) or answers.pop(0))
    assert not window.tabs.save(document) and path.read_text() == "before\n"  # asked first: "No" writes nothing
    assert "now holds 1 invisible character (U+202E RIGHT-TO-LEFT OVERRIDE), which the file did not" in asked[0]
    assert window.tabs.save(document) and len(asked) == 2
    assert path.read_text() == "ok]0;title[2J\ufffd \u202eevil\n"
    window.tabs.close_tab(document.editor)
    assert window.tabs.open_path(str(path)) is not None  # it still opens (a NUL would have made it "binary")


# --- model folders ----------------------------------------------------------------------------

def load_error(folder: Path) -> str:
    with pytest.raises(EngineError) as caught:
        load_backend(str(folder), device="cpu")
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_a_tokenizer_larger_than_the_model_is_refused(tmp_path, tiny_model_dir, project_tokenizer):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.add_tokens([f"<extra_{i}>" for i in range(5000)])
    tokenizer.save_pretrained(folder)
    assert "tokens but the model only" in load_error(folder)


@pytest.mark.parametrize("broken", ["empty weights", "garbage tokenizer.json"])
def test_broken_model_files_give_one_line(tmp_path, tiny_model_dir, broken):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    if broken == "empty weights":
        (folder / "model.safetensors").write_bytes(b"")
    else:
        (folder / "tokenizer.json").write_text("{ this is not a tokenizer")
    message = load_error(folder)
    assert str(folder) in message and "cannot load the model" in message


# --- JSON Lines -------------------------------------------------------------------------------

def test_a_huge_jsonl_line_is_answered(monkeypatch, capsys, tiny_model_dir):
    import io

    line = json.dumps({"id": "big", "prefix": "word " * 200_000, "suffix": "", "max_new_tokens": 2})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((line + "\n" + json.dumps({"id": "next", "max_new_tokens": 2}) + "\n").encode())))
    assert main(["infill", "--jsonl", "--model", str(tiny_model_dir), "--steps", "2", "--seed", "1"]) == 0
    records = [json.loads(out) for out in capsys.readouterr().out.splitlines()]
    assert [record["id"] for record in records] == ["big", "next"] and all("text" in record for record in records)


def test_a_jsonl_request_for_a_billion_tokens_gets_an_error_line_and_the_rest_run(monkeypatch, capsys, tiny_model_dir):
    import io

    lines = [json.dumps({"id": "greedy", "max_new_tokens": 10**9}), json.dumps({"id": "fine", "max_new_tokens": 2})]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(("\n".join(lines) + "\n").encode())))
    assert main(["infill", "--jsonl", "--model", str(tiny_model_dir), "--steps", "2", "--seed", "1"]) == 0
    greedy, fine = [json.loads(out) for out in capsys.readouterr().out.splitlines()]
    assert greedy == {"id": "greedy", "error": "max_new_tokens must be at most 4096"}
    assert "text" in fine


def test_a_jsonl_line_that_is_not_utf8_is_an_error_line_and_the_model_is_not_loaded_for_it(tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b'{"id": 1, "prefix": "caf\xe9"}\n')
    result = subprocess.run(
        [sys.executable, "-m", "sfumato.app.cli", "infill", "--jsonl", str(requests), "--model", str(tmp_path / "never-loaded")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "none of the 1 requests" in result.stderr
    assert json.loads(result.stdout) == {"id": 1, "error": "line 1 is not valid UTF-8 (invalid continuation byte at byte 24 of the line)"}


def test_a_jsonl_line_that_is_not_utf8_costs_only_its_own_answer(monkeypatch, capsys, tiny_model_dir):
    import io

    stream = b"\n".join([json.dumps({"id": "before", "max_new_tokens": 2}).encode(),
                          b'{"id": "latin-1", "prefix": "caf\xe9", "max_new_tokens": 2}',
                          b'{"id": "caf\xe9", "max_new_tokens": 2}',  # the bad byte in the id: no id to give
                          json.dumps({"id": "after", "max_new_tokens": 2}).encode()]) + b"\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stream)))
    assert main(["infill", "--jsonl", "--model", str(tiny_model_dir), "--steps", "2", "--seed", "1"]) == 0
    before, latin, unnamed, after = [json.loads(out) for out in capsys.readouterr().out.splitlines()]
    assert "text" in before and "text" in after
    assert latin == {"id": "latin-1", "error": "line 2 is not valid UTF-8 (invalid continuation byte at byte 32 of the line)"}
    assert unnamed["id"] is None and unnamed["error"].startswith("line 3 is not valid UTF-8")


def sfumato(tmp_path, *args, stdin=None) -> subprocess.CompletedProcess:
    """A headless command on a model that is never loaded (its input is refused first)."""
    return subprocess.run([sys.executable, "-m", "sfumato.app.cli", *args, "--model", str(tmp_path / "never-loaded")],
                          cwd=REPO, stdin=stdin, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command", ["fill", "infill"])
def test_a_device_a_fifo_and_a_huge_file_are_refused_by_the_headless_commands(tmp_path, command):
    fifo, huge = tmp_path / "fifo", tmp_path / "huge.txt"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading would wait forever
    with open(huge, "wb") as file:
        file.truncate(100 << 20)
    special = "it is not a regular file (a device, a pipe or a socket)"
    for path, expected in (("/dev/zero", special), (fifo, special), (huge, "the file is 100 MB; Sfumato opens files up to 64 MB")):
        args = ["fill", str(path)] if command == "fill" else ["infill", "--jsonl", str(path)]
        result = sfumato(tmp_path, *args)
        assert result.returncode == 1 and result.stdout == "" and result.stderr == f"sfumato: {path}: {expected}\n"


def test_endless_standard_input_is_refused_by_its_line_and_total_bounds(tmp_path):
    with open("/dev/zero", "rb") as zeros:
        result = sfumato(tmp_path, "infill", "--jsonl", stdin=zeros)
    assert result.returncode == 1 and result.stderr == "sfumato: a line of the input is longer than 16 MB; stopped reading\n"
    endless = subprocess.Popen(["yes", '{"id": 1}'], stdout=subprocess.PIPE)
    try:
        result = sfumato(tmp_path, "infill", "--jsonl", stdin=endless.stdout)
    finally:
        endless.kill()
        endless.wait()
        endless.stdout.close()
    assert result.returncode == 1 and result.stderr == "sfumato: the input is larger than 64 MB; stopped reading\n"

@pytest.mark.parametrize("answer", ["Save", "Cancel"])
def test_saving_over_a_file_another_program_changed_asks_first(window, qtbot, tmp_path, monkeypatch, answer):

    path = tmp_path / "shared.txt"
    path.write_text("mine\n")
    document = open_and_type(window, qtbot, path)
    window.tabs.watcher.blockSignals(True)  # as if the watcher had not reported the change yet
    path.write_text("theirs, and longer\n")
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: asked.append(args[2]) or getattr(QMessageBox.StandardButton, answer))
    assert window.tabs.save(document) == (answer == "Save")
    assert "changed by another program" in asked[0]
    assert path.read_text() == ("mine\nmore" if answer == "Save" else "theirs, and longer\n")
    assert document_text(document.editor.document()) == "mine\nmore"


def test_reloading_a_file_that_now_holds_a_paragraph_separator_keeps_the_text(window, qtbot, tmp_path):
    path = tmp_path / "watched.txt"
    path.write_text("calm\n")
    document = window.tabs.open_path(str(path))
    path.write_text("changed\u2029by another program\n")  # the watcher reloads an unmodified document
    qtbot.waitUntil(lambda: window.notices.box is not None and "U+2029" in window.notices.box.text(), timeout=10000)
    assert "Your text is kept" in window.notices.box.text()
    assert document_text(document.editor.document()) == "calm\n"


def test_a_lone_surrogate_in_the_text_reaches_the_model_as_a_replacement_character(monkeypatch, capsys, tiny_model_dir):
    """A pasted half of a surrogate pair is in the user's text, which no tokenizer takes: the
    request runs on the text around it (the editor sends such text the same way)."""
    import io

    from sfumato.model.api import InfillRequest, TemplateRequest

    request = InfillRequest(prefix="x\ud800 = ", suffix="\udc80", init_text="a\ud83d", context=("# b.py\n\ud800",))
    assert (request.prefix, request.suffix, request.init_text, request.context) == ("x\ufffd = ", "\ufffd", "a\ufffd", ("# b.py\n\ufffd",))
    assert TemplateRequest(("a\ud800", "b"), (4,)).segments == ("a\ufffd", "b")
    lines = [json.dumps({"id": "lone", "prefix": "x\ud800 = ", "max_new_tokens": 2}), json.dumps({"id": "null prefix", "prefix": None, "max_new_tokens": 2})]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(("\n".join(lines) + "\n").encode())))
    assert main(["infill", "--jsonl", "--model", str(tiny_model_dir), "--steps", "2", "--seed", "1"]) == 0
    records = [json.loads(out) for out in capsys.readouterr().out.splitlines()]
    assert [record["id"] for record in records] == ["lone", "null prefix"] and all("text" in record for record in records)
