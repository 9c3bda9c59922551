"""Settings > Server: a model served elsewhere (URL, model name, API key) and what is sent to it.

The API key goes to the OS keyring (``sfumato.model.remote.credentials``) when the dialog is accepted,
never into the settings file; an empty key field leaves a stored key as it is.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from PySide6.QtWidgets import QCheckBox, QFormLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QWidget

from sfumato.app.context_files import SECRET_PATTERNS
from sfumato.app.settings import Settings
from sfumato.model.api import SERVER_URL
from sfumato.model.region_prompt import SERVER_PROMPT_TOKENS, character_budgets
from sfumato.model.remote.credentials import ENV_VARIABLE, shown_url


def sent_description(context_tokens: int = SERVER_PROMPT_TOKENS) -> str:
    before, after = character_budgets(context_tokens)
    return (
        f"Sent with each request: up to {before:,} characters before the region and {after:,} after it, "
        "the selection when rewriting, your instruction, and a few 16-line snippets of the project's other "
        "files (other tabs and the open folder) with their names. Nothing else of the document, nor its file name. "
        "Never sent: hidden files (.env, .git), git-ignored files, symbolic links, and secret files "
        "(keys, certificates, credentials: " + " ".join(SECRET_PATTERNS[:8]) + " …)."
    )


class ServerPage(QWidget):
    """``folder_files``: the open folder's files that snippets may come from now (listed)."""

    def __init__(self, settings: Settings, folder_files: Sequence[str] = (), parent: QWidget | None = None):
        super().__init__(parent)
        form = QFormLayout(self)
        self.use_server = QCheckBox("Run AI edits on a server (vLLM, SGLang, transformers serve, Mercury…)")
        self.use_server.setChecked(settings.use_server)
        form.addRow("", self.use_server)
        self.url = QLineEdit(settings.server_url)
        self.url.setPlaceholderText("http://gpu-box:8000/v1")
        form.addRow("Server URL", self.url)
        self.model = QLineEdit(settings.server_model)
        self.model.setPlaceholderText("the first model the server lists")
        form.addRow("Model name", self.model)
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("kept in the OS keyring; empty leaves a stored key as it is")
        form.addRow("API key", self.api_key)
        if os.environ.get(ENV_VARIABLE):
            form.addRow("", QLabel(f"{ENV_VARIABLE} is set: that key is used."))
        sent = QLabel(sent_description())
        sent.setWordWrap(True)
        form.addRow("", sent)
        self.folder_files = QPlainTextEdit("\n".join(folder_files) or "(no folder open, or none of its files is text)")
        self.folder_files.setReadOnly(True)
        self.folder_files.setMaximumHeight(120)
        form.addRow(f"Folder files sent ({len(folder_files)})", self.folder_files)
        self._allowed = list(settings.servers_allowed), list(settings.plain_http_allowed)
        self.forget = QPushButton("Ask again before sending to servers")
        self.forget.setEnabled(bool(settings.servers_allowed or settings.plain_http_allowed))
        self.forget.clicked.connect(self._forget_answers)
        form.addRow("", self.forget)

    def problem(self) -> str | None:
        """Why the page cannot be accepted as it is, or None."""
        url = self.url.text().strip()
        if (self.use_server.isChecked() or url) and not SERVER_URL.match(url):
            return "The server URL must start with http:// or https:// and end in /v1 (e.g. http://gpu-box:8000/v1)."
        if shown_url(url) != url:
            return "Leave the user name and password out of the server URL (the settings file would keep them); put a key in the API key field."
        return None

    def new_api_key(self) -> str | None:
        return self.api_key.text().strip() or None

    def apply(self, settings: Settings) -> None:
        settings.use_server = self.use_server.isChecked()
        settings.server_url = self.url.text().strip()
        settings.server_model = self.model.text().strip()
        settings.servers_allowed, settings.plain_http_allowed = list(self._allowed[0]), list(self._allowed[1])

    def _forget_answers(self) -> None:
        self._allowed = [], []
        self.forget.setEnabled(False)
