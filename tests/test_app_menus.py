"""What the menus, the find bar and the palette show: every shortcut, plain names, no dead ends."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from test_app_support import qasync_loop, window  # noqa: F401 - fixtures

from sfumato.app.palette import Picker


def menu_entries(window) -> dict[str, object]:
    """"Menu: Entry" (no accelerator marks) for every entry of the menu bar."""
    entries = {}
    for top in window.menuBar().actions():
        for action in top.menu().actions():
            if not action.isSeparator():
                entries[f"{top.text()}: {action.text()}".replace("&", "")] = action
    return entries


def test_menu_entries_show_their_shortcuts(window):
    entries = menu_entries(window)
    shortcut = {name: action.shortcut().toString() for name, action in entries.items()}
    assert shortcut["AI: Next Alternative"] == "Alt+]"
    assert shortcut["AI: Previous Alternative"] == "Alt+["
    assert shortcut["Edit: Cut"] == QKeySequence(QKeySequence.StandardKey.Cut).toString()
    assert shortcut["Edit: Copy"] == QKeySequence(QKeySequence.StandardKey.Copy).toString()
    assert shortcut["Edit: Paste"] == QKeySequence(QKeySequence.StandardKey.Paste).toString()
    assert all(shortcut[name] for name in ("Edit: Cut", "Edit: Copy", "Edit: Paste", "Edit: Replace…", "File: Settings…"))


def test_changed_alternative_keys_show_in_the_menu(window):
    window.settings.keys["next_alternative"] = "Ctrl+Alt+N"
    window.apply_settings()
    assert menu_entries(window)["AI: Next Alternative"].shortcut().toString() == "Ctrl+Alt+N"


def test_the_sidebar_entry_keeps_its_name_when_a_folder_opens(window, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    window.open_folder(str(folder))
    names = [name for name, action in menu_entries(window).items() if action.shortcut().toString() == "Ctrl+B"]
    assert names == ["View: Folder Sidebar"]
    assert menu_entries(window)["View: Folder Sidebar"].isChecked()


def test_the_find_bar_shows_replace_buttons_only_with_the_replace_field(window):
    bar = window.find_bar
    window.tabs.new_document()
    bar.open(replace=False)
    assert not bar.replace_text.isVisible()
    assert not bar.replace_button.isVisible() and not bar.replace_all_button.isVisible()
    bar.open(replace=True)
    assert bar.replace_text.isVisible()
    assert bar.replace_button.isVisible() and bar.replace_all_button.isVisible()


def test_the_palette_says_so_when_nothing_matches(qtbot):
    picker = Picker("Commands", [("File: Save", "Ctrl+S", lambda: None)])
    qtbot.addWidget(picker)
    picker.query.setText("zzzz")
    assert picker.results.count() == 1
    assert picker.results.item(0).text() == "No matches"
    assert not picker.results.item(0).flags() & Qt.ItemFlag.ItemIsSelectable
    picker.query.setText("save")
    assert [picker.results.item(i).text() for i in range(picker.results.count())] == ["File: Save    Ctrl+S"]


def test_typing_on_narrows_the_last_matches_and_lists_what_a_fresh_picker_would(qtbot):
    names = ["src/app.py", "snap/map.py", "apply.py", "docs/api.md", "lib/happy.py", "a/p/p.txt", "zzz.py"]

    def listed(picker) -> list[str]:
        return [picker.results.item(i).text() for i in range(picker.results.count())]

    typed = Picker("Go to File", [(name, "", lambda: None) for name in names])
    qtbot.addWidget(typed)
    for text in ("a", "ap", "app", "ap", "apy", "a p", ""):
        typed.query.setText(text)
        fresh = Picker("Go to File", [(name, "", lambda: None) for name in names])
        qtbot.addWidget(fresh)
        fresh.query.setText(text)
        assert listed(typed) == listed(fresh), text
    typed.query.setText("app")
    assert listed(typed) == ["apply.py", "src/app.py", "lib/happy.py", "a/p/p.txt", "snap/map.py"]
