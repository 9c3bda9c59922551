"""The settings dialog: edits a copy of ``Settings`` and returns it on OK."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFontComboBox,
    QFormLayout,
    QHBoxLayout,
    QKeySequenceEdit,
    QLabel,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from sfumato.app.server_page import ServerPage
from sfumato.app.settings import BOUNDS, DEFAULT_KEYS, Settings
from sfumato.app.theme import THEMES, editor_font, style_names
from sfumato.model.api import EngineError
from sfumato.model.remote.credentials import store_api_key

KEY_LABELS = {
    "rewrite": "Rewrite selection / infill at cursor",
    "fill_gaps": "Fill every [MASK] gap",
    "accept": "Accept the result",
    "accept_word": "Accept the result's next word (an infill at the cursor)",
    "reject": "Reject the result",
    "next_alternative": "Next alternative",
    "previous_alternative": "Previous alternative",
    "try_again": "Try again (the next alternative)",
    "toggle_diff": "Review the result as a diff, or clean",
}
QUANTIZE_LABELS = {  # --quantize's values, as the Precision box shows them
    "auto": "Automatic (the embedded model in bfloat16 where the CPU is faster so, else with float16 weights)",
    "none": "Full (bfloat16 on a GPU, float32 on the CPU)",
    "int8": "int8 weights (CPU or CUDA)",
    "int4": "int4 weights (CUDA; the 26B model on a 24 GB card)",
    "nf4": "nf4 weights, bitsandbytes (CUDA)",
}


def _spin(low: int, high: int, value: int, special: str | None = None) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    if special:
        box.setSpecialValueText(special)
    return box


class SettingsDialog(QDialog):
    """``look_changed`` carries the settings as edited whenever the theme, a style or the font
    changes, so the window can show them at once (and put its own back on Cancel).
    ``folder_files``: the open folder's files that go as project context (the Server tab lists them)."""

    look_changed = Signal(object)

    def __init__(self, settings: Settings, parent: QWidget | None = None, folder_files: Sequence[str] = ()):
        super().__init__(parent)
        self.setWindowTitle("Sfumato settings")
        self._settings = copy.deepcopy(settings)
        tabs = QTabWidget()
        tabs.addTab(self._model_page(), "Model")
        self.server_page = ServerPage(self._settings, folder_files)
        tabs.addTab(self.server_page, "Server")
        tabs.addTab(self._editor_page(), "Editor")
        tabs.addTab(self._keys_page(), "Keys")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(buttons)

    def _model_page(self) -> QWidget:
        s = self._settings
        page = QWidget()
        form = QFormLayout(page)
        self.model_spec = QComboBox()
        self.model_spec.setEditable(True)
        self.model_spec.addItems(["embedded", "google/diffusiongemma-26B-A4B-it"])
        self.model_spec.setCurrentText(s.model_spec)
        self.model_spec.setToolTip("'embedded', a model folder, or a hub id (owner/name); a served model: the Server tab")
        browse = QPushButton("Folder…")
        browse.clicked.connect(self._browse_model)
        row = QHBoxLayout()
        row.addWidget(self.model_spec, 1)
        row.addWidget(browse)
        form.addRow("Model", row)
        self.allow_downloads = QCheckBox("Allow downloading models from the hub")
        self.allow_downloads.setChecked(s.allow_downloads)
        form.addRow("", self.allow_downloads)
        self.device = QComboBox()
        self.device.setEditable(True)
        self.device.addItems(["auto", "cpu", "cuda", "mps"])
        self.device.setCurrentText(s.device)
        self.device.setToolTip("auto: the first GPU, or every GPU and CPU memory for a model too big for one; "
                               "cpu, cuda, cuda:N (a GPU by number) or mps (Apple silicon)")
        form.addRow("Device", self.device)
        self.quantize = QComboBox()
        for value, label in QUANTIZE_LABELS.items():
            self.quantize.addItem(label, value)
        self.quantize.setCurrentIndex(max(0, self.quantize.findData(s.quantize)))
        self.quantize.setToolTip("Fewer bits per weight: less memory, about the same text. "
                                 "int4 and nf4 need a CUDA GPU; all need pip install 'sfumato[gpu]'")
        form.addRow("Precision", self.quantize)
        self.trust_remote_code = QCheckBox("Trust remote code (runs Python shipped with the model)")
        self.trust_remote_code.setChecked(s.trust_remote_code)
        self.trust_remote_code.toggled.connect(self._confirm_remote_code)
        form.addRow("", self.trust_remote_code)
        self.steps = _spin(*BOUNDS["steps"], s.steps, "model default")
        form.addRow("Denoising steps", self.steps)
        self.sampler_bound = QDoubleSpinBox()
        self.sampler_bound.setRange(*BOUNDS["sampler_bound"])
        self.sampler_bound.setDecimals(2)
        self.sampler_bound.setSingleStep(0.1)
        self.sampler_bound.setSpecialValueText("model default")
        self.sampler_bound.setValue(s.sampler_bound)
        self.sampler_bound.setToolTip("How unsure a token may be and still be accepted in a pass: higher is faster, lower is better. "
                                      "Model default: the embedded model settles only the guesses its own left-to-right "
                                      "reading confirms, the same text as one token a pass")
        form.addRow("Sampler bound (speed vs quality)", self.sampler_bound)
        self.max_new_tokens = _spin(*BOUNDS["max_new_tokens"], s.max_new_tokens)
        form.addRow("Infill length cap (max new tokens)", self.max_new_tokens)
        self.alternatives = _spin(*BOUNDS["alternatives"], s.alternatives)
        form.addRow("Alternatives per run", self.alternatives)
        self.rewrite_strength = QDoubleSpinBox()
        self.rewrite_strength.setRange(*BOUNDS["rewrite_strength"])
        self.rewrite_strength.setSingleStep(0.05)
        self.rewrite_strength.setValue(s.rewrite_strength)
        form.addRow("Rewrite strength (the box keeps the last one used)", self.rewrite_strength)
        self.slow_motion_ms = _spin(*BOUNDS["slow_motion_ms"], s.slow_motion_ms, "off")
        self.slow_motion_ms.setSuffix(" ms per pass")
        form.addRow("Slow motion", self.slow_motion_ms)
        self.underline = QCheckBox("Underline low-confidence tokens in results")
        self.underline.setChecked(s.underline_low_confidence)
        form.addRow("", self.underline)
        self.suggest = QCheckBox("Suggest the rest of a line while typing (a local model only; Tab takes it)")
        self.suggest.setChecked(s.suggest_while_typing)
        form.addRow("", self.suggest)
        return page

    def _editor_page(self) -> QWidget:
        s = self._settings
        page = QWidget()
        form = QFormLayout(page)
        self.indent_with_spaces = QCheckBox("Indent with spaces (soft tabs), unless a file shows its own indentation")
        self.indent_with_spaces.setChecked(s.indent_with_spaces)
        form.addRow("", self.indent_with_spaces)
        self.indent_width = _spin(*BOUNDS["indent_width"], s.indent_width)
        form.addRow("Indent width", self.indent_width)
        self.auto_close = QCheckBox("Close brackets and quotes as they are typed")
        self.auto_close.setChecked(s.auto_close)
        form.addRow("", self.auto_close)
        self.reopen_files = QCheckBox("Reopen the files that were open when Sfumato last closed")
        self.reopen_files.setChecked(s.reopen_files)
        form.addRow("", self.reopen_files)
        self.theme = QComboBox()
        for key, label in THEMES.items():
            self.theme.addItem(label, key)
        self.theme.setCurrentIndex(max(0, self.theme.findData(s.theme)))
        form.addRow("Theme", self.theme)
        self.light_style, self.dark_style = QComboBox(), QComboBox()
        for box, name, label in ((self.light_style, s.light_style, "Text style, light"), (self.dark_style, s.dark_style, "Text style, dark")):
            box.addItems(style_names())
            box.setCurrentText(name)
            form.addRow(label, box)
        self.font_family = QFontComboBox()
        self.font_family.setFontFilters(QFontComboBox.FontFilter.MonospacedFonts)
        self.font_family.setCurrentFont(editor_font(s.font_family, 0))
        self.font_size = _spin(*BOUNDS["font_size"], s.font_size, f"default ({round(editor_font(s.font_family, 0).pointSizeF())} pt)")
        self.font_size.setSuffix(" pt")
        row = QHBoxLayout()
        row.addWidget(self.font_family, 1)
        row.addWidget(self.font_size)
        form.addRow("Font", row)
        for signal in (self.theme.currentIndexChanged, self.light_style.currentTextChanged, self.dark_style.currentTextChanged,
                       self.font_family.currentFontChanged, self.font_size.valueChanged):
            signal.connect(lambda *_: self.look_changed.emit(self.result_settings()))
        return page

    def _keys_page(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.key_edits: dict[str, QKeySequenceEdit] = {}
        for action, label in KEY_LABELS.items():
            edit = QKeySequenceEdit(QKeySequence(self._settings.keys.get(action, DEFAULT_KEYS[action])))
            edit.setMaximumSequenceLength(1)
            self.key_edits[action] = edit
            form.addRow(label, edit)
        reset = QPushButton("Restore defaults")
        reset.clicked.connect(lambda: [e.setKeySequence(QKeySequence(DEFAULT_KEYS[a])) for a, e in self.key_edits.items()])
        form.addRow("", reset)
        form.addRow(QLabel("Key changes apply to new sessions and menus right away."))
        return page

    def _browse_model(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Model folder")
        if folder:
            self.model_spec.setCurrentText(folder)

    def _confirm_remote_code(self, on: bool) -> None:
        if not on:
            return
        answer = QMessageBox.warning(
            self,
            "Trust remote code?",
            "A model that ships its own Python code runs that code on this computer, with your "
            "permissions, when it loads. Only turn this on for models whose code you have read "
            "or whose authors you trust.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        if answer != QMessageBox.StandardButton.Yes:
            self.trust_remote_code.setChecked(False)

    def accept(self) -> None:
        """Refuse a bad server URL; store a new API key in the keyring (never in the settings)."""
        problem = self.server_page.problem()
        key = self.server_page.new_api_key()
        if problem is None and key is not None:
            try:
                store_api_key(self.server_page.url.text().strip(), key)
            except EngineError as error:
                problem = str(error)
        if problem is not None:
            QMessageBox.warning(self, "Server", problem)
            return
        super().accept()

    def result_settings(self) -> Settings:
        s = self._settings
        s.model_spec = self.model_spec.currentText().strip() or "embedded"
        s.allow_downloads = self.allow_downloads.isChecked()
        s.device = self.device.currentText().strip() or "auto"
        s.quantize = self.quantize.currentData()
        s.trust_remote_code = self.trust_remote_code.isChecked()
        s.steps = self.steps.value()
        s.sampler_bound = self.sampler_bound.value()
        s.max_new_tokens = self.max_new_tokens.value()
        s.alternatives = self.alternatives.value()
        s.rewrite_strength = self.rewrite_strength.value()
        s.slow_motion_ms = self.slow_motion_ms.value()
        s.underline_low_confidence = self.underline.isChecked()
        s.suggest_while_typing = self.suggest.isChecked()
        s.indent_with_spaces = self.indent_with_spaces.isChecked()
        s.indent_width = self.indent_width.value()
        s.reopen_files = self.reopen_files.isChecked()
        s.auto_close = self.auto_close.isChecked()
        s.theme = self.theme.currentData()
        s.light_style, s.dark_style = self.light_style.currentText(), self.dark_style.currentText()
        system_font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
        s.font_family = "" if self.font_family.currentFont().family() == system_font else self.font_family.currentFont().family()
        s.font_size = self.font_size.value()
        s.keys = {a: e.keySequence().toString() or DEFAULT_KEYS[a] for a, e in self.key_edits.items()}
        self.server_page.apply(s)
        return s
