"""Changed-line marks: the text at git's HEAD against the text being edited."""

from __future__ import annotations

import subprocess

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.document import Document
from sfumato.app.gitdiff import committed_text, line_changes


def git(folder, *args):
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def repository(folder):
    """A git repository in ``folder`` whose one commit holds a.py (CR LF line breaks)."""
    folder.mkdir(exist_ok=True)
    git(folder, "init", "-q")
    git(folder, "config", "user.email", "t@example.com")
    git(folder, "config", "user.name", "t")
    (folder / "a.py").write_bytes(b"one\r\ntwo\r\nthree\r\nfour\r\n")
    git(folder, "add", "a.py")
    git(folder, "commit", "-q", "-m", "first")
    return folder / "a.py"


def test_added_modified_and_deleted_lines_are_told_apart():
    base = "one\ntwo\nthree\nfour\n"
    assert line_changes(base, base) == {}
    assert line_changes(base, "one\nTWO\nthree\nnew\nfour\n") == {1: "modified", 3: "added"}
    assert line_changes(base, "one\nfour\n") == {1: "deleted"}
    assert line_changes(base, "one\ntwo\nthree\n") == {3: "deleted"}


def test_the_committed_text_comes_from_head_and_none_outside_git(tmp_path):
    path = repository(tmp_path / "repo")
    path.write_text("changed on disk\n")
    assert committed_text(str(path)) == "one\ntwo\nthree\nfour\n"  # HEAD's, with its line breaks made \n
    (path.parent / "new.py").write_text("x\n")
    assert committed_text(str(path.parent / "new.py")) is None  # untracked
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b.py").write_text("x\n")
    assert committed_text(str(outside / "b.py")) is None


def test_an_open_file_marks_the_lines_typed_since_the_commit(qtbot, tmp_path):
    path = repository(tmp_path / "repo")
    editor = CodeEditor()
    qtbot.addWidget(editor)
    document = Document.open(str(path), editor)
    assert editor.line_marks == {}
    cursor = editor.textCursor()
    cursor.movePosition(cursor.MoveOperation.End)
    cursor.insertText("five\n")
    qtbot.waitUntil(lambda: editor.line_marks == {4: "added"})
    path.write_text(editor.toPlainText())
    git(path.parent, "commit", "-q", "-am", "second")
    document.refresh_committed()
    assert editor.line_marks == {}
