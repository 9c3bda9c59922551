"""The window's AI actions: loading the model and showing its state, and Ctrl+K, Fill Gaps, Try Again
and the review keys acting on the current editor's infill session."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from functools import partial

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QLabel, QMessageBox, QProgressBar, QToolButton

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.commandkeys import session_keys
from sfumato.app.documenttabs import DocumentTabs
from sfumato.app.folder_context import FolderContext
from sfumato.app.infill import InfillOptions, EditStarter
from sfumato.app.inlinebox import InlineBox
from sfumato.app.notices import Notices
from sfumato.app.server_consent import ServerConsent
from sfumato.app.session import EditSession, Outcome
from sfumato.app.settings import Settings
from sfumato.app.suggester import Suggester
from sfumato.app.textpositions import document_text, text_between
from sfumato.app.worker_adapter import WorkerAdapter, load_from_spec, model_label
from sfumato.model.api import SERVER_URL, Candidate
from sfumato.model.remote.credentials import origin, shown_url
from sfumato.model.rewrite_effect import rewrite_effect
from sfumato.model.project_context import MAX_FOLDER_FILE_BYTES, Chunk, ProjectChunks, file_chunks


REST_MS = 400  # the cursor is still this long: Ctrl+K may come there


class AiController(QObject):
    """Owns the worker adapter and the starter; ``model_label``, ``load_progress`` and
    ``cancel_load`` are its status-bar widgets; ``folder_context`` is the open folder's part of the
    project context. ``model_override`` is ``sfumato --model SPEC`` and
    ``hardware_override`` its ``--device`` and ``--quantize``: this run only, never saved.
    ``review_diff_changed``: the review's key switched between the diff and the clean result."""

    review_diff_changed = Signal(bool)

    def __init__(self, loop: asyncio.AbstractEventLoop, tabs: DocumentTabs, notices: Notices,
                 settings: Settings, save_settings: Callable[[], None], model_override: str | None,
                 folder_context: FolderContext, hardware_override: dict[str, str | None] | None = None):
        super().__init__(tabs)
        self._loop = loop
        self.tabs = tabs
        self.notices = notices
        self.settings = settings
        self._save_settings = save_settings
        self.model_override = model_override
        self.hardware_override = hardware_override or {}
        self.worker = WorkerAdapter(loop, self)
        self.worker.status.connect(self._show_model_status)
        self.worker.load_progress.connect(self._show_load_progress)
        self.worker.served.connect(self._show_server_status)
        self.consent = ServerConsent(settings, self._ask, remembered=save_settings)
        self._spec = ""  # what the worker loaded (a server's URL for a served model)
        self._held = False  # ``_spec`` is a server not connected yet: it waits for the user's consent
        self.starter = EditStarter(self.worker, InfillOptions(), session_keys(settings.keys))
        self.folder_context = folder_context
        self.starter.project_chunks = self.project_chunks
        self.starter.file_name = self.file_name
        self._tab_chunks: dict[int, tuple[tuple[str, int], tuple[Chunk, ...]]] = {}  # a tab's, by its name and revision
        self._ended: EditSession | None = None  # the last session that ended (an empty one may run again)
        self._starts = 0  # counts ``start`` calls: one waiting for a server's address yields to a later one
        self.model_label = QLabel("No model")
        self.load_progress = QProgressBar()
        self.load_progress.setRange(0, 0)
        self.load_progress.setMaximumWidth(90)
        self.load_progress.setMaximumHeight(14)
        self.load_progress.hide()
        self.cancel_load = QToolButton()
        self.cancel_load.setText("✕")
        self.cancel_load.setToolTip("Stop loading the model (editing goes on without AI edits)")
        self.cancel_load.setAutoRaise(True)
        self.cancel_load.clicked.connect(self.worker.cancel_loading)
        self.cancel_load.hide()
        self.suggester = Suggester(self.worker, lambda: self.starter.keys, lambda text: self.notices.say(text, 4000),
                                   local=lambda: not SERVER_URL.match(self._spec))
        self._rest = QTimer(self, singleShot=True, interval=REST_MS)  # the cursor rests: warm the prompt
        self._rest.timeout.connect(self._warm_at_cursor)

    def apply_settings(self) -> None:
        s = self.settings
        self.starter.options = InfillOptions(
            max_new_tokens=s.max_new_tokens,
            steps=s.steps or None,
            sampler_bound=s.sampler_bound or None,
            alternatives=s.alternatives,
            underline_low_confidence=s.underline_low_confidence,
            review_diff=s.review_diff,
        )
        self.starter.keys = session_keys(s.keys)
        self.suggester.enabled = s.suggest_while_typing
        if not s.suggest_while_typing:
            self.suggester.cancel()
            for document in self.tabs.documents():
                document.editor.suggestion.clear()
        self.worker.slow_motion_ms = s.slow_motion_ms
        for document in self.tabs.documents():
            if document.editor.session is not None:
                document.editor.session.set_underline(s.underline_low_confidence)
                document.editor.session.set_diff(s.review_diff)

    def project_chunks(self, editor: CodeEditor, refresh: bool = True) -> ProjectChunks:
        """The project context's chunks for a request from ``editor``: the other open tabs', then
        the open folder's files that no tab holds (a tab's unsaved text wins over the file); a tab
        of a hidden, secret or git-ignored file is left out. The folder's are what its cache holds
        now; a refresh starts for the next request (unless ``refresh`` is False: a warm)."""
        documents = self.tabs.documents()
        tabs = [chunk for document in documents
                if document.editor is not editor and (not document.path or self.folder_context.admits(document.path))
                for chunk in self._chunks_of_tab(document)]
        open_now = {id(document.editor.document()) for document in documents}
        self._tab_chunks = {key: held for key, held in self._tab_chunks.items() if key in open_now}
        if refresh:
            self.folder_context.refresh()
        return ProjectChunks(tabs, self.folder_context.index, frozenset(document.path for document in documents if document.path))

    def file_name(self, editor: CodeEditor) -> str:
        """The name of the file ``editor`` shows, no folder ("" when untitled or not a tab's)."""
        document = next((d for d in self.tabs.documents() if d.editor is editor), None)
        return os.path.basename(document.path) if document is not None and document.path else ""

    def _chunks_of_tab(self, document) -> tuple[Chunk, ...]:
        """A tab's chunks, cut again only when its name or text changed (a warm asks for them at
        every cursor rest, on the UI thread); none for a text larger than a folder file the context
        reads (a 40 MB log's text was copied at every rest, its 600,000 chunks scored)."""
        text_document = document.editor.document()
        key = (document.name, text_document.revision())
        held = self._tab_chunks.get(id(text_document))
        if held is None or held[0] != key:
            large = text_document.characterCount() > MAX_FOLDER_FILE_BYTES
            held = (key, () if large else file_chunks(document.name, document_text(text_document)))
            self._tab_chunks[id(text_document)] = held
        return held[1]

    def cursor_moved(self) -> None:
        """The current editor's cursor or text changed: a suggestion running is not wanted; once the
        cursor rests, ask for one or warm the prompt."""
        self.suggester.cancel()
        self._rest.start()

    def _warm_at_cursor(self) -> None:
        editor = self.tabs.current_editor()
        if editor is None or editor.session is not None or self.worker.info is None:
            return
        # a selection: at the strength Ctrl+K's box opens with
        request = self.starter.cursor_request(editor, self.project_chunks(editor, refresh=False), self.settings.rewrite_strength)
        if request is None:
            return
        busy = any(document.editor.session for document in self.tabs.documents())  # a suggestion would wait behind it
        if request.is_rewrite or busy or not self.suggester.ask(editor, request):  # a suggestion reads the prompt too
            self.worker.warm(request)

    # --- the model ----------------------------------------------------------------------------

    def start_engine(self) -> None:
        """(Re)load the model in the background; sessions running on the old one are rejected. A
        server not yet allowed is not contacted at all (not even to list its models) until then."""
        s = self.settings
        for document in self.tabs.documents():
            document.editor.end_session()
        spec = self._spec = self.model_override or s.active_model_spec
        if SERVER_URL.match(spec) and not self.consent.settled(spec):
            self.load_progress.hide()
            self.cancel_load.hide()
            self._held = True  # connected by ``start`` once the user allows the server
            self.worker.hold(f"Server {origin(spec)}: not connected until you allow it (the first AI edit asks)")
            return
        self._load()

    def _load(self) -> None:
        s = self.settings
        self._held = False
        device = self.hardware_override.get("device") or s.device
        quantize = self.hardware_override.get("quantize") or s.quantize
        self.load_progress.setRange(0, 0)  # busy until the first tensor is read
        self.load_progress.show()
        self.cancel_load.show()
        remote_model = (s.server_model or None) if self._spec == s.server_url else None  # the Server page's model name
        admits = self.consent.admits(self._spec) if SERVER_URL.match(self._spec) else None  # checked on each connection
        loader = load_from_spec(self._spec, device, quantize, s.allow_downloads, s.trust_remote_code, remote_model, admits)
        self.worker.start_loading(loader, shown_url(self._spec))

    def _show_load_progress(self, done: int, total: int) -> None:
        self.load_progress.setRange(0, total)
        self.load_progress.setValue(done)
        self.load_progress.setToolTip(f"Loading the weights: {done} of {total} tensors read")

    def _show_model_status(self, text: str) -> None:
        """A short label at the right (details in its tooltip); the whole line as a message."""
        worker = self.worker
        if worker.info is not None:
            self.model_label.setText(model_label(worker.info))
        elif worker.error is not None:
            self.model_label.setText("No model")
        elif self._held:
            self.model_label.setText("Server not connected")
        else:
            self.model_label.setText("Loading model…")
        self.model_label.setToolTip(text)
        self.load_progress.setVisible(worker.loading)
        self.cancel_load.setVisible(worker.loading)
        self.notices.say(text, 10000)

    def _show_server_status(self, line: str) -> None:
        """A served model: the server, its last round trip and speed, and what the user should know."""
        self.model_label.setText(line)
        self.model_label.setToolTip(f"{self.worker.info.name if self.worker.info else ''}\n{line}")

    def _ask(self, title: str, question: str) -> bool:
        """A privacy question, on the UI thread, before anything is sent."""
        answer = QMessageBox.question(self.tabs.window(), title, question)
        return answer == QMessageBox.StandardButton.Yes

    def _may_send(self) -> bool:
        """False (and nothing sent) when the user does not let the document go to the server."""
        if not SERVER_URL.match(self._spec):
            return True
        if self.consent.allows(self._spec):
            return True
        self.notices.say("Nothing was sent: the server was not allowed. Your text is unchanged.", 6000)
        return False

    def _model_ready(self) -> bool:
        if self.worker.error is not None:
            self.notices.error(f"AI edits are off: {self.worker.error}. Choose a model in Settings.")
            return False
        if self.worker.loading:
            self.notices.say("The model is still loading; the request will start when it is ready.", 4000)
        return True

    # --- the actions --------------------------------------------------------------------------

    def rewrite(self) -> None:
        """Ctrl+K: with a selection, ask strength (and instruction); without, infill at once."""
        editor = self.tabs.current_editor()
        if editor is None or not self._model_ready():
            return
        editor.end_session()
        instruction_tuned = self.worker.info is not None and self.worker.info.instruction_tuned
        if editor.textCursor().hasSelection() or instruction_tuned:
            cursor, info = editor.textCursor(), self.worker.info
            selection = text_between(editor.document(), cursor.selectionStart(), cursor.selectionEnd())
            effect = partial(rewrite_effect, info, selection=selection) if info is not None else None
            box = InlineBox(editor, self.settings.rewrite_strength, instruction_tuned, effect)
            box.submitted.connect(lambda strength, text: self._rewrite_with(editor, strength, text))
            box.open()
        else:
            self.start(editor, lambda: self.starter.rewrite(editor))

    def _rewrite_with(self, editor: CodeEditor, strength: float, instruction: str) -> None:
        """Run the box's rewrite; its strength becomes the one the next box starts at."""
        if strength != self.settings.rewrite_strength:
            self.settings.rewrite_strength = strength
            self._save_settings()
        self.start(editor, lambda: self.starter.rewrite(editor, strength, instruction))

    def fill_gaps(self) -> None:
        editor = self.tabs.current_editor()
        if editor is not None and self._model_ready():
            self.start(editor, lambda: self.starter.fill_gaps(editor))

    def try_again(self) -> None:
        """Put the original back and run the request again (``EditStarter.again``): a new draw,
        the same settings, the text around the region as it is now."""
        editor = self.tabs.current_editor()
        session = editor.session if editor is not None else None
        if session is None and self._ended is not None and self._ended.editor is editor:
            session = self._ended
        if session is None or not session.can_try_again:
            self.notices.say("Nothing to try again: Ctrl+K starts a rewrite.", 4000)
        elif self._model_ready():
            self.start(editor, lambda: self.starter.again(session))

    def on_session(self, action: Callable[[EditSession], object]) -> None:
        """Accept, reject, the alternatives: ``action`` on the current editor's session, if any."""
        editor = self.tabs.current_editor()
        if editor is not None and editor.session is not None:
            action(editor.session)

    def start(self, editor: CodeEditor, begin: Callable[[], EditSession | None]) -> None:
        """Start a session in ``editor`` with ``begin`` and show its progress in the status bar.
        On a server whose name was never resolved, that is done off the UI thread first; the
        start then goes on if it is still the latest one and ``editor`` is still the current tab."""
        editor.setFocus()  # Tab, Esc and Alt+] reach the session only from the editor
        self.suggester.cancel()
        editor.suggestion.clear()
        self._starts += 1
        if SERVER_URL.match(self._spec) and not self.consent.located(self._spec):
            self.notices.say(f"Looking up the server {origin(self._spec)}…")
            self._loop.create_task(self._start_once_located(self._starts, editor, begin))
            return
        if not self._may_send():
            return
        if self._held:
            self._load()
        try:
            session = begin()
        except ValueError as error:
            self.notices.say(str(error), 6000)
            return
        if session is None:
            return
        self._watch(editor, session)
        info = self.worker.info
        doing = f"Waiting for server {info.device}…" if info is not None and info.served else "Denoising…"
        if editor.document().isRedoAvailable():
            self.notices.say(f"{doing} (the redo history is replaced by this edit)")
        else:
            self.notices.say(doing)

    def _watch(self, editor: CodeEditor, session: EditSession) -> None:
        """Show ``session``'s news in the status bar and the tab's title, and handle its end."""
        session.progress.connect(self.notices.say)
        session.again_requested.connect(self.try_again)
        session.rest_offered.connect(lambda rest, confident, s=session: self._offer_rest(s, rest, confident))
        session.diff_toggled.connect(self._remember_diff)
        session.modification_changed.connect(lambda _modified, e=editor: self.tabs.update_title(e))
        session.ended.connect(lambda outcome, text, s=session: self._session_ended(s, outcome, text))

    def _offer_rest(self, taken: EditSession, rest: Candidate, confident: bool) -> None:
        """Accept Word took a word of ``taken``'s result: the rest is the next session's, at once."""
        session = self.starter.rest_session(taken.editor, taken.request)
        self._watch(taken.editor, session)
        session.offer(rest, confident)

    def _remember_diff(self, on: bool) -> None:
        """The next reviews start as this one was switched to (a diff, or clean)."""
        self.settings.review_diff = self.starter.options.review_diff = on
        self._save_settings()
        self.review_diff_changed.emit(on)

    async def _start_once_located(self, start: int, editor: CodeEditor, begin: Callable[[], EditSession | None]) -> None:
        await self.consent.locate(self._spec, self._loop)
        if start != self._starts:
            return  # a later start speaks for itself
        if self.tabs.current_editor() is editor:
            self.start(editor, begin)
        else:
            self.notices.say("Nothing was sent: another tab was chosen while the server was looked up.", 6000)

    def _session_ended(self, session: EditSession, outcome: Outcome, text: str) -> None:
        editor = session.editor
        self._ended = session
        if outcome is Outcome.ACCEPTED:  # "Ctrl+Z brings back the original" holds until the next change
            self.notices.say_until_edited(text, editor.document(), 6000)
        else:
            self.notices.say(text, 6000)
        self.tabs.update_title(editor)
