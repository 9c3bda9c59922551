"""The open folder as project context: bounded reading off the UI thread, tabs over disk, the
nearest snippets in a request and in its prompt."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from PySide6.QtCore import Qt

from test_app_support import FakeBackend, qasync_loop, select, window, with_fake_model  # noqa: F401 - fixtures

import sfumato.app.folder_context as folder_context
import sfumato.model.project_context as project_context
from sfumato.app.folder_context import read_folder
from sfumato.app.textpositions import document_text
from sfumato.model.project_context import CHUNK_LINES, PROMPT_SNIPPETS, Chunk, context_tokens, file_chunks, nearest_chunks

HELPERS = "def load_settings(path):\n    with open(path) as file:\n        return parse_settings(file.read())\n"


def snippets_of(files) -> list[str]:
    return [chunk.snippet for file in files.values() for chunk in file.chunks]


def test_reading_a_folder_skips_binary_invalid_and_huge_files(tmp_path, monkeypatch):
    monkeypatch.setattr(project_context, "MAX_FOLDER_FILE_BYTES", 1000)
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR load_settings")
    (tmp_path / "latin.txt").write_bytes("load_settings café".encode("latin-1"))
    (tmp_path / "big.py").write_text("load_settings = 1\n" * 100)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "notes.py").write_text(HELPERS)

    files = read_folder(str(tmp_path), {})

    assert snippets_of(files) == [f"# helpers.py\n{HELPERS}\n"]
    assert str(tmp_path / "big.py") not in files  # too big: not even read


def test_a_named_pipe_in_the_folder_or_as_its_gitignore_is_left_out_and_blocks_nothing(tmp_path):
    """Opening a named pipe for reading waits until a program writes to it: the folder's read
    never ended, and the editor could not quit (its reading thread is waited for)."""
    (tmp_path / "helpers.py").write_text(HELPERS)
    os.mkfifo(tmp_path / "pipe.py")
    os.mkfifo(tmp_path / ".gitignore")
    read: list[dict] = []
    reader = threading.Thread(target=lambda: read.append(read_folder(str(tmp_path), {})), daemon=True)
    reader.start()
    reader.join(30)
    assert read, "the folder's read is still waiting on a named pipe"
    assert snippets_of(read[0]) == [f"# helpers.py\n{HELPERS}\n"]


def test_hidden_secret_git_ignored_and_linked_files_never_become_context(tmp_path):
    secrets = [".env", ".env.local", "prod.env", "id_rsa", "id_ed25519.pub", "server.pem", "api.key", ".netrc",
               "aws_credentials.py", "client_secret.json", ".config/tokens.py", "build/generated.py",
               "debug.log", "sub/local_settings.py", "sub/deep/trace.log"]
    for name in secrets + ["app.py", "sub/keep.log", "sub/deep/kept.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"load_settings = {name!r}\n")
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "sub" / ".gitignore").write_text("local_settings.py\n!keep.log\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("load_settings = 'outside'\n")
    (tmp_path / "linked.py").symlink_to(outside)

    sent = sorted(os.path.relpath(path, tmp_path) for path, file in read_folder(str(tmp_path), {}).items() if file.chunks)

    assert sent == ["app.py", "sub/deep/kept.py", "sub/keep.log"]


def test_a_tab_of_a_secret_or_ignored_file_is_not_sent_and_settings_list_what_is(window, qtbot, tmp_path):  # noqa: F811
    from sfumato.app.settings_dialog import SettingsDialog

    project = tmp_path / "project"
    project.mkdir()
    (project / ".gitignore").write_text("local.py\n")
    for name in (".env", "local.py", "helpers.py"):
        (project / name).write_text(f"load_settings = {name!r}\n")
    elsewhere = tmp_path / "server.key"
    elsewhere.write_text("load_settings = 'key'\n")
    window.open_folder(str(project))
    qtbot.waitUntil(lambda: window.folder.context.sent_files() == ["helpers.py"])
    for path in (project / ".env", project / "local.py", elsewhere):
        window.tabs.open_path(str(path))
    editor = window.tabs.new_document().editor

    assert [chunk.snippet for chunk in window.ai.project_chunks(editor)] == ["# helpers.py\nload_settings = 'helpers.py'\n\n"]
    dialog = SettingsDialog(window.settings, window, window.folder.context.sent_files())
    assert dialog.server_page.folder_files.toPlainText() == "helpers.py"
    dialog.deleteLater()


def test_a_folder_is_read_within_its_file_and_byte_bounds(tmp_path, monkeypatch):
    for index in range(5):
        (tmp_path / f"module{index}.py").write_text(f"value_{index} = compute_value({index})\n")
    monkeypatch.setattr(project_context, "MAX_FOLDER_FILES", 3)
    assert len(snippets_of(read_folder(str(tmp_path), {}))) == 3
    monkeypatch.setattr(project_context, "MAX_FOLDER_FILES", 100)
    size = (tmp_path / "module0.py").stat().st_size
    monkeypatch.setattr(project_context, "MAX_FOLDER_BYTES", 2 * size)
    assert len(snippets_of(read_folder(str(tmp_path), {}))) == 2


def test_a_folder_slow_to_read_is_not_read_again_until_its_quiet_time_has_passed(qasync_loop, tmp_path, monkeypatch):  # noqa: F811
    """A home folder took 4-7 s of Python a read, and every request and save started one."""
    reads = []

    def slow_read(root, previous):
        reads.append(root)
        time.sleep(folder_context.SLOW_READ_S + 0.05)
        return {}, project_context.ChunkIndex(())

    monkeypatch.setattr(folder_context, "_read_and_index", slow_read)
    monkeypatch.setattr(folder_context, "READ_SHARE", 1000)  # quiet for 5 minutes: a slow test machine cannot outlast it
    context = folder_context.FolderContext(qasync_loop)
    qasync_loop.run_until_complete(context.open(str(tmp_path)))
    qasync_loop.run_until_complete(context.refresh() or asyncio.sleep(0))  # a request right after: no new read
    assert len(reads) == 1
    now = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: now() + 60 * folder_context.READ_SHARE)
    qasync_loop.run_until_complete(context.refresh())  # once the quiet time has passed
    assert len(reads) == 2
    qasync_loop.run_until_complete(context.open(str(tmp_path)))  # opening a folder always reads it
    assert len(reads) == 3


def test_an_unchanged_file_is_not_read_again_and_a_changed_one_is(tmp_path):
    (tmp_path / "a.py").write_text("alpha_value = 1\n")
    (tmp_path / "b.py").write_text("beta_value = 2\n")
    first = read_folder(str(tmp_path), {})
    (tmp_path / "b.py").write_text("beta_value = 3  # changed\n")
    os.utime(tmp_path / "b.py", ns=(1, 1))  # a new modification time whatever the clock's resolution

    second = read_folder(str(tmp_path), first)

    assert second[str(tmp_path / "a.py")] is first[str(tmp_path / "a.py")]
    assert "beta_value = 3" in second[str(tmp_path / "b.py")].chunks[0].snippet


def test_nearest_chunks_share_the_most_names_and_nameless_text_makes_none():
    chunks = [*file_chunks("settings.py", HELPERS), *file_chunks("other.py", "def render(page):\n    return page\n"),
              *file_chunks("blank.txt", "\n\n-- 1 2 --\n")]
    assert len(chunks) == 2
    found = nearest_chunks("config = load_settings(", ")\nparse_settings(config)\n", chunks, limit=1)
    assert found == (f"# settings.py\n{HELPERS}\n",)
    assert nearest_chunks("", "", chunks) == ()


def test_the_folders_index_chooses_what_scoring_every_chunk_would_ties_and_left_out_files_included():
    """The open folder's chunks are looked up by name (scored one by one, 14,000 took 45 ms of the
    UI thread at every cursor rest); the snippets chosen are the same, in the same order."""
    import random

    from sfumato.model.project_context import ChunkIndex, ProjectChunks

    rng = random.Random(7)
    names = [f"name_{i}" for i in range(40)]

    def some_file(name: str) -> tuple[Chunk, ...]:
        text = "\n".join(" = ".join(rng.sample(names, 2)) for _ in range(3 * CHUNK_LINES))
        return file_chunks(name, text)

    tabs = [chunk for k in range(3) for chunk in some_file(f"tab{k}.py")]
    folder = [(f"/p/f{k}.py", chunk) for k in range(30) for chunk in some_file(f"f{k}.py")]
    left_out = frozenset({"/p/f3.py", "/p/f17.py"})
    indexed = ProjectChunks(tabs, ChunkIndex(folder), left_out)
    listed = ProjectChunks(tabs + [chunk for path, chunk in folder if path not in left_out])
    assert list(indexed) == list(listed.listed)
    for _ in range(50):
        prefix, suffix = " ".join(rng.sample(names, rng.randint(1, 12))) + "\n", " ".join(rng.sample(names, rng.randint(0, 5)))
        assert indexed.nearest(prefix, suffix) == listed.nearest(prefix, suffix) == nearest_chunks(prefix, suffix, list(listed))
        assert len(indexed.nearest(prefix, suffix)) == PROMPT_SNIPPETS


def test_a_template_chunk_with_a_gap_is_not_a_snippet():
    template = "def is_palindrome(text):\n    return [MASK:12]\n\n\n" + "\n" * 16 + "def mean(values):\n    return sum(values)\n"
    snippets = [chunk.snippet for chunk in file_chunks("template.py", template)]
    assert snippets and not any("[MASK" in snippet for snippet in snippets)
    assert any("def mean" in snippet for snippet in snippets)  # the file's chunks without a gap still count


def test_a_prompt_holds_only_the_nearest_snippets(project_tokenizer):
    snippets = [f"# f{index}.py\nname_{index} = {index}\n" for index in range(PROMPT_SNIPPETS + 4)]
    tokens = context_tokens(project_tokenizer, snippets, budget=100_000)
    assert tokens == context_tokens(project_tokenizer, snippets[:PROMPT_SNIPPETS], budget=100_000)


def test_nearest_snippets_share_names_with_the_cursor(project_tokenizer):
    files = [("a.py", "def parse_header(line):\n    return line.split(':')\n"),
             ("b.py", "def unrelated():\n    return 42\n")]
    snippets = nearest_chunks("header = parse_header(", ")\n", [c for name, text in files for c in file_chunks(name, text)])
    assert len(snippets) == 1 and snippets[0].startswith("# a.py\n")
    tokens = context_tokens(project_tokenizer, snippets * 50, budget=128)
    assert 0 < len(tokens) <= 128 // 4


def test_chat_and_served_prompts_carry_the_context():
    from sfumato.model.api import InfillRequest
    from sfumato.model.region_prompt import context_text, region_message

    request = InfillRequest(prefix="x = ", suffix="\n", context=("# a.py\ndef helper():\n    pass\n",))
    assert "def helper" in region_message(request, 512)
    assert context_text(request, 512) == request.context[0]
    assert context_text(request, 8) == ""  # a snippet that does not fit whole is left out


def test_the_folder_is_read_off_the_ui_thread_and_a_request_never_waits_for_it(window, qtbot, tmp_path, monkeypatch):  # noqa: F811
    project = tmp_path / "project"
    project.mkdir()
    (project / "helpers.py").write_text(HELPERS)
    release, readers = threading.Event(), []

    def slow_read(root, previous):
        readers.append(threading.current_thread())
        release.wait(30)
        return read_folder(root, previous)

    monkeypatch.setattr(folder_context, "read_folder", slow_read)
    window.open_folder(str(project))
    editor = window.tabs.new_document().editor
    qtbot.waitUntil(lambda: bool(readers))

    assert list(window.ai.project_chunks(editor)) == []  # the read is still running: nothing, at once
    release.set()
    qtbot.waitUntil(lambda: bool(window.folder.context.files))
    assert threading.main_thread() not in readers
    assert [chunk.snippet for chunk in window.ai.project_chunks(editor)] == [f"# helpers.py\n{HELPERS}\n"]


def test_an_open_tab_wins_over_its_file_on_disk_and_a_save_refreshes_the_folder(window, qtbot, tmp_path):  # noqa: F811
    project = tmp_path / "project"
    project.mkdir()
    path = project / "helpers.py"
    path.write_text(HELPERS)
    (project / "notes.py").write_text("old_note = 1\n")
    window.open_folder(str(project))
    qtbot.waitUntil(lambda: len(window.folder.context.files) == 2)
    helpers = window.tabs.open_path(str(path))
    helpers.editor.setPlainText(HELPERS.replace("parse_settings", "parse_unsaved"))
    editor = window.tabs.new_document().editor

    snippets = [chunk.snippet for chunk in window.ai.project_chunks(editor)]
    assert any("parse_unsaved" in snippet for snippet in snippets)
    assert not any("parse_settings" in snippet for snippet in snippets)
    assert not any("parse_unsaved" in chunk.snippet for chunk in window.ai.project_chunks(helpers.editor))

    notes = window.tabs.open_path(str(project / "notes.py"))
    notes.editor.selectAll()
    notes.editor.insertPlainText("new_note = 22\n")
    assert window.tabs.save(notes)
    qtbot.waitUntil(lambda: any("new_note" in snippet for snippet in snippets_of(window.folder.context.files)))


FOLDER_FILE = """import json


def read_config(path):
    with open(path) as handle:
        config = json.load(handle)
    config.setdefault("retries", 3)
    return config
"""
DOCUMENT = """def read_defaults(path):
    with open(path) as handle:
        config = json.load(handle)
    \n    return config
"""


def test_ctrl_k_sends_a_folder_file_that_is_not_open_as_the_requests_context(window, qtbot, tmp_path):  # noqa: F811
    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    window.ai.worker.slow_motion_ms = 0
    (tmp_path / "config.py").write_text(FOLDER_FILE)
    window.open_folder(str(tmp_path))
    qtbot.waitUntil(lambda: bool(window.folder.context.files))
    editor = window.tabs.new_document().editor
    editor.setPlainText(DOCUMENT)
    cursor = editor.textCursor()
    cursor.setPosition(DOCUMENT.index("\n    \n") + 5)
    editor.setTextCursor(cursor)

    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: editor.session.state == "ready", timeout=10000)
    (request,) = backend.requests[-1]
    assert request.context == (f"# config.py\n{FOLDER_FILE}\n",)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == DOCUMENT


def test_ctrl_k_and_the_warm_send_the_documents_file_name(window, qtbot, tmp_path, monkeypatch):  # noqa: F811
    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    window.ai.worker.slow_motion_ms = 0
    (tmp_path / "deploy.sh").write_text("#!/bin/sh\nset -e\n\n")
    editor = window.tabs.open_path(str(tmp_path / "deploy.sh")).editor
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    warmed = []
    monkeypatch.setattr(window.ai.worker, "warm", warmed.append)
    window.ai._warm_at_cursor()
    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: editor.session.state == "ready", timeout=10000)
    (request,) = backend.requests[-1]
    assert request.file_name == warmed[0].file_name == "deploy.sh"
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    untitled = window.tabs.new_document().editor
    untitled.setPlainText("x = ")
    untitled.moveCursor(untitled.textCursor().MoveOperation.End)
    qtbot.keyClick(untitled, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: untitled.session.state == "ready", timeout=10000)
    assert backend.requests[-1][0].file_name == ""


def test_the_prompt_warmed_at_a_resting_cursor_carries_the_project_context(window, qtbot, monkeypatch):  # noqa: F811
    """The embedded engine puts the project's snippets in its prompt: a warm without them would
    read a prompt Ctrl+K never sends."""
    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    other = window.tabs.new_document().editor
    other.setPlainText("def load_settings(path):\n    return json.loads(open(path).read())\n")
    editor = window.tabs.new_document().editor
    editor.setPlainText("settings = load_settings(")
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    warmed = []
    monkeypatch.setattr(window.ai.worker, "warm", warmed.append)
    window.ai._warm_at_cursor()
    session = window.ai.starter.rewrite(editor)
    qtbot.waitUntil(lambda: session.state != "running", timeout=10000)
    assert warmed and "load_settings" in "".join(warmed[0].context)
    (sent,) = backend.requests[-1]
    assert (sent.prefix, sent.suffix, sent.context) == (warmed[0].prefix, warmed[0].suffix, warmed[0].context)


def test_a_resting_selection_warms_the_rewrite_ctrl_k_sends_and_asks_no_suggestion(window, qtbot, monkeypatch):  # noqa: F811
    """Ctrl+K on a selection reads its prompt first, as at a cursor: read while the selection rests,
    the first pass comes at once. A selection too long for an edit (Select All) is not read ahead."""
    from sfumato.app import infill

    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    editor = window.tabs.new_document().editor
    editor.setPlainText("total = 0\nfor x in items:\n    total += x\nprint(total)\n")
    select(editor, 10, 41)  # the loop
    warmed, asked = [], []
    monkeypatch.setattr(window.ai.worker, "warm", warmed.append)
    monkeypatch.setattr(window.ai.suggester, "ask", lambda *args: asked.append(args) or True)
    editor.suggestion.typed = True  # as after typing: a cursor would ask for a suggestion
    window.settings.rewrite_strength = 0.7
    window.ai._warm_at_cursor()
    window.ai._rewrite_with(editor, 0.7, "")  # what Ctrl+K's box sends, at the strength it opens with
    qtbot.waitUntil(lambda: editor.session is not None and editor.session.state != "running", timeout=10000)
    (sent,) = backend.requests[-1]
    assert not asked and len(warmed) == 1 and sent.strength == 0.7
    assert warmed[0].init_text == sent.init_text == "for x in items:\n    total += x\n"
    assert (warmed[0].prefix, warmed[0].suffix, warmed[0].strength) == (sent.prefix, sent.suffix, sent.strength)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    monkeypatch.setattr(infill, "WARMED_SELECTION_CHARS", 20)
    select(editor, 10, 41)
    window.ai._warm_at_cursor()
    assert len(warmed) == 1
