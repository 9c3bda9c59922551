"""The window's menu bar: every command with its name and default shortcut (the command palette
lists the same actions). The actions whose shortcut, text or check mark follow the settings come
back in ``MenuActions``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.session import EditSession
from sfumato.app.theme import THEMES

if TYPE_CHECKING:
    from sfumato.app.mainwindow import MainWindow


@dataclass
class MenuActions:
    recent: QMenu
    rewrite: QAction
    fill: QAction
    accept: QAction
    accept_word: QAction
    reject: QAction
    try_again: QAction
    next_alternative: QAction
    previous_alternative: QAction
    wrap: QAction
    themes: dict[str, QAction]  # settings' theme name: its View > Theme entry
    whitespace: QAction
    underline: QAction
    review_diff: QAction
    slow_motion: QAction
    suggest: QAction


def _action(window: MainWindow, menu: QMenu, text: str, slot, shortcut=None, checkable: bool = False) -> QAction:
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    action.setCheckable(checkable)
    action.triggered.connect(lambda checked=False: slot())
    menu.addAction(action)
    return action


def build_menus(window: MainWindow) -> MenuActions:
    """File, Edit, View, AI and Help, wired to ``window``, its tabs and its AI controller."""
    tabs, ai, on_editor = window.tabs, window.ai, window.on_editor
    keys = QKeySequence.StandardKey
    menus = window.menuBar()

    file = menus.addMenu("&File")
    _action(window, file, "&New", tabs.new_document, keys.New)
    _action(window, file, "&Open…", tabs.open_dialog, keys.Open)
    _action(window, file, "Open &Folder…", window.open_folder_dialog)
    _action(window, file, "Go to &File…", window.go_to_file, "Ctrl+P")
    recent = file.addMenu("Open &Recent")
    recent.aboutToShow.connect(window.fill_recent)
    _action(window, file, "&Save", tabs.save, keys.Save)
    _action(window, file, "Save &As…", tabs.save_as, keys.SaveAs)
    _action(window, file, "Save A&ll", tabs.save_all, "Ctrl+Alt+S")
    _action(window, file, "&Close", lambda: tabs.close_tab(tabs.current_editor()), keys.Close)
    file.addSeparator()
    _action(window, file, "Settings…", window.open_settings, "Ctrl+,")
    _action(window, file, "&Quit", window.close, keys.Quit)

    edit = menus.addMenu("&Edit")
    _action(window, edit, "&Undo", lambda: on_editor(CodeEditor.safe_undo), keys.Undo)
    _action(window, edit, "&Redo", lambda: on_editor(CodeEditor.safe_redo), keys.Redo)
    edit.addSeparator()
    _action(window, edit, "Cu&t", lambda: on_editor(CodeEditor.cut), keys.Cut)
    _action(window, edit, "&Copy", lambda: on_editor(CodeEditor.copy), keys.Copy)
    _action(window, edit, "&Paste", lambda: on_editor(CodeEditor.paste), keys.Paste)
    edit.addSeparator()
    _action(window, edit, "Toggle &Comment", window.toggle_comment, "Ctrl+/")
    _action(window, edit, "&Duplicate Lines", lambda: on_editor(CodeEditor.duplicate_lines), "Ctrl+Shift+D")
    _action(window, edit, "Add Next &Occurrence", lambda: on_editor(CodeEditor.add_next_occurrence), "Ctrl+D")
    _action(window, edit, "Move Lines &Up", lambda: on_editor(lambda e: e.move_lines(down=False)), "Alt+Up")
    _action(window, edit, "Move Lines Do&wn", lambda: on_editor(lambda e: e.move_lines(down=True)), "Alt+Down")
    edit.addSeparator()
    find_bar = window.find_bar
    _action(window, edit, "&Find…", lambda: find_bar.open(replace=False), keys.Find)
    _action(window, edit, "&Replace…", lambda: find_bar.open(replace=True), "Ctrl+H")
    _action(window, edit, "Find &Next", lambda: find_bar.find(False), keys.FindNext)
    _action(window, edit, "Find Pre&vious", lambda: find_bar.find(True), keys.FindPrevious)
    _action(window, edit, "&Go to Line…", window.go_to_line, "Ctrl+G")
    _action(window, edit, "Go to &Symbol…", window.go_to_symbol, "Ctrl+Shift+O")
    _action(window, edit, "Find in F&older…", window.find_in_folder, "Ctrl+Shift+F")

    view = menus.addMenu("&View")
    _action(window, view, "&Command Palette…", window.show_palette, "Ctrl+Shift+P")
    dock_toggle = window.folder.tree_dock.toggleViewAction()  # its text follows the dock's title: the folder's name
    sidebar = _action(window, view, "Folder &Sidebar", dock_toggle.trigger, "Ctrl+B", checkable=True)
    dock_toggle.toggled.connect(sidebar.setChecked)
    view.addSeparator()
    _action(window, view, "Zoom &In", lambda: on_editor(lambda e: e.zoom(1)), keys.ZoomIn)
    _action(window, view, "Zoom &Out", lambda: on_editor(lambda e: e.zoom(-1)), keys.ZoomOut)
    _action(window, view, "&Reset Zoom", lambda: on_editor(lambda e: e.zoom(0)), "Ctrl+0")
    view.addSeparator()
    _action(window, view, "Next &Tab", lambda: window.step_tab(1)).setShortcuts([QKeySequence("Ctrl+PgDown"), QKeySequence("Ctrl+Tab")])
    _action(window, view, "Pre&vious Tab", lambda: window.step_tab(-1)).setShortcuts([QKeySequence("Ctrl+PgUp"), QKeySequence("Ctrl+Shift+Tab")])
    _action(window, view, "Reopen C&losed Tab", tabs.reopen_closed_tab, "Ctrl+Shift+T")
    view.addSeparator()
    wrap = _action(window, view, "&Word Wrap", lambda: window.toggle(window.wrap_setting(), wrap.isChecked()), "Alt+Z", checkable=True)
    whitespace = _action(window, view, "Show W&hitespace", lambda: window.toggle("show_whitespace", whitespace.isChecked()), checkable=True)
    underline = _action(window, view, "&Underline Low-Confidence Tokens",
                        lambda: window.toggle("underline_low_confidence", underline.isChecked()), checkable=True)
    slow = _action(window, view, "&Slow Motion", lambda: window.toggle("slow_motion_ms", 250 if slow.isChecked() else 0), checkable=True)
    theme_menu = view.addMenu("Th&eme")
    themes, group = {}, QActionGroup(window)
    for name, label in THEMES.items():
        themes[name] = _action(window, theme_menu, label, lambda n=name: window.toggle("theme", n), checkable=True)
        group.addAction(themes[name])

    ai_menu = menus.addMenu("&AI")
    rewrite = _action(window, ai_menu, "&Rewrite Selection / Infill at Cursor", ai.rewrite)
    fill = _action(window, ai_menu, "&Fill Every [MASK] Gap", ai.fill_gaps)
    ai_menu.addSeparator()
    accept = _action(window, ai_menu, "&Accept", lambda: ai.on_session(EditSession.accept))
    accept_word = _action(window, ai_menu, "Accept &Word", lambda: ai.on_session(EditSession.accept_word))
    reject = _action(window, ai_menu, "Re&ject", lambda: ai.on_session(EditSession.dismiss))
    next_alternative = _action(window, ai_menu, "&Next Alternative", lambda: ai.on_session(lambda s: s.cycle(1)))
    previous_alternative = _action(window, ai_menu, "&Previous Alternative", lambda: ai.on_session(lambda s: s.cycle(-1)))
    for cycle in (next_alternative, previous_alternative):  # the menu shows the key; the key goes to the session only
        cycle.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)  # (EditSession.handle_key), its one route
    try_again = _action(window, ai_menu, "&Try Again", ai.try_again)
    review_diff = _action(window, ai_menu, "Review as &Diff", lambda: window.toggle("review_diff", review_diff.isChecked()), checkable=True)
    ai.review_diff_changed.connect(review_diff.setChecked)
    suggest = _action(window, ai_menu, "&Suggest While Typing", lambda: window.toggle("suggest_while_typing", suggest.isChecked()),
                      checkable=True)
    ai_menu.addSeparator()
    _action(window, ai_menu, "Reload &Model", ai.start_engine)

    help_menu = menus.addMenu("&Help")
    _action(window, help_menu, "&Keyboard Shortcuts", window.show_shortcuts, "F1")
    _action(window, help_menu, "&About Sfumato", window.show_about)
    return MenuActions(recent, rewrite, fill, accept, accept_word, reject, try_again, next_alternative, previous_alternative,
                       wrap, themes, whitespace, underline, review_diff, slow, suggest)
