"""Find in Folder's reading: files told apart by their bytes find the same lines as decoding all."""

from PySide6.QtCore import Qt

from test_app_support import qasync_loop, window  # noqa: F401 - fixtures

from sfumato.app import search
from sfumato.app.search import matches_in_folder, may_hold


def test_only_plain_ascii_without_the_query_is_passed_over_undecoded():
    assert not may_hold(b"def total(x):\n", "zzz", case_sensitive=False)
    assert may_hold(b"def Total(x):\n", "total", case_sensitive=False)
    assert not may_hold(b"def Total(x):\n", "total", case_sensitive=True)
    assert may_hold("caf\u00e9 total".encode("latin-1"), "zzz", case_sensitive=False)  # not ASCII: decoded to know
    assert may_hold("total".encode("utf-16-le"), "zzz", case_sensitive=False)  # NUL bytes: UTF-16 or binary
    assert may_hold(b"plain", "\u00fcber", case_sensitive=False)  # a query beyond ASCII: decoded to know


def test_the_shortcut_finds_what_decoding_every_file_finds(tmp_path, monkeypatch):
    files = {
        "plain.py": b"import os\n\ndef Total(x):\n    return total(x)\n",
        "utf16.txt": "the TOTAL is 3\r\n".encode("utf-16-le"),
        "latin1.txt": "caf\u00e9: total\n".encode("latin-1"),
        "kelvin.txt": "273 \u212a in total\n".encode(),  # KELVIN SIGN lowers to an ASCII k
        "nothing.py": b"x = 1\n",
        "image.png": b"\x89PNG\r\n\x1a\n\x00total\x00",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    for query, case_sensitive in (("total", False), ("total", True), ("k in", False), ("\u00e9: t", False), ("TOTAL", True)):
        found = list(matches_in_folder(str(tmp_path), query, case_sensitive))
        monkeypatch.setattr(search, "may_hold", lambda *args: True)
        assert found == list(matches_in_folder(str(tmp_path), query, case_sensitive)), query
        monkeypatch.undo()
    assert [(m.path, m.line) for m in matches_in_folder(str(tmp_path), "total")] == [
        ("kelvin.txt", 1), ("latin1.txt", 1), ("plain.py", 3), ("plain.py", 4), ("utf16.txt", 1)]


def test_found_lines_are_listed_while_the_search_goes_on_and_a_newer_search_stops_it(window, qtbot, tmp_path, monkeypatch):  # noqa: F811
    """A large folder took seconds before its first line showed: now each batch shows as found."""
    import os
    import threading

    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(f"total in {name}\n")
    release, read = threading.Event(), []
    real_files, real_read = search.folder_files, search.fileio.read_bounded

    def slow_folder(root):  # after the first file, the rest only once the test lets it go on
        for number, name in enumerate(real_files(root)):
            if number == 1:
                release.wait(30)
            yield name

    monkeypatch.setattr(search, "folder_files", slow_folder)
    monkeypatch.setattr(search.fileio, "read_bounded", lambda path: read.append(os.path.basename(path)) or real_read(path))
    monkeypatch.setattr(search, "SHOWN_EVERY_S", 0.0)
    window.open_folder(str(tmp_path))
    window.find_in_folder()
    panel = window.folder.search
    panel.query.setText("total")
    qtbot.keyClick(panel.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.results.count() == 1, timeout=10000)
    assert panel.results.item(0).text() == "a.txt:1: total in a.txt" and panel.summary.text() == "Searching…"
    release.set()
    qtbot.waitUntil(lambda: panel.summary.text() == "2 matches in 2 files", timeout=10000)
    assert [panel.results.item(i).text() for i in range(panel.results.count())] == [
        "a.txt:1: total in a.txt", "b.txt:1: total in b.txt"]
    release.clear()
    read.clear()
    qtbot.keyClick(panel.query, Qt.Key.Key_Return)  # held after its first file ...
    qtbot.waitUntil(lambda: panel.results.count() == 1, timeout=10000)
    panel.query.setText("zzz")
    qtbot.keyClick(panel.query, Qt.Key.Key_Return)  # ... when a newer search begins
    release.set()
    qtbot.waitUntil(lambda: panel.summary.text() == "No matches.", timeout=10000)
    qtbot.wait(200)
    assert read.count("b.txt") == 1  # the newer search's: the older read no file after it was replaced
