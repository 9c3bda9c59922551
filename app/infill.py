"""Turning the editor's state into model requests and sessions: rewrite, infill, gap fill."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.textpositions import document_text, index_of, position_of, text_around, text_between
from sfumato.app.worker_adapter import WorkerAdapter
from sfumato.app.commandkeys import SessionKeys
from sfumato.app.session import EditSession
from sfumato.model.api import InfillRequest, TemplateRequest
from sfumato.model.gap_scope import at_block_end
from sfumato.model.project_context import ProjectChunks
from sfumato.model.template import Gap, find_gaps, segments_of

CONTEXT_CHARS = 6000  # text sent on each side of the region; the engine trims to the model's window
CHARS_PER_TOKEN = 3.0
MAX_REWRITE_TOKENS = 2048  # a rewrite's canvas follows the selection's size, up to this
WARMED_SELECTION_CHARS = 4000  # a longer selection resting is not read ahead (a rewrite of it takes minutes)


@dataclass
class InfillOptions:
    max_new_tokens: int = 64  # the cap for infill at the cursor (rewrites follow the selection, at least this)
    gap_tokens: int = 32  # a [MASK] without a length hint
    steps: int | None = None
    sampler_bound: float | None = None
    alternatives: int = 1
    underline_low_confidence: bool = False
    review_diff: bool = True


def rewrite_length(original: str, at_least: int) -> int:
    """Canvas size for rewriting ``original``: its token estimate with room to grow, and never less
    than ``at_least`` (the cap of an infill at the cursor): a heavy rewrite writes a selected line
    again whole, and a short selection's own size cut it off (``pass`` came back ``dx = b[0] - a[0``)."""
    return min(MAX_REWRITE_TOKENS, max(at_least, int(len(original) / CHARS_PER_TOKEN * 1.5) + 8))


def region_request(around: dict[str, object], original: str, cap: int, strength: float, **options) -> InfillRequest:
    """The request for a region holding ``original`` placed by ``around`` (``surroundings``): a
    selection is rewritten at ``strength``; at a cursor the rest of its line is written, or at a
    blank line that ends an indented block (an empty body under ``def f():``) the rest of the block."""
    return InfillRequest(
        **around,
        max_new_tokens=rewrite_length(original, cap) if original else cap,
        init_text=original or None,
        strength=strength if original else 1.0,
        one_line=not original and not at_block_end(around["prefix"], around["suffix"]),
        **options,
    )


def surroundings(document, start: int, end: int, chunks: ProjectChunks, file_name: str = "") -> dict[str, object]:
    """A request's fields that place the Qt span ``start``-``end`` in ``document`` (a file named
    ``file_name``, "" when untitled): the text before and after it, and the project's ``chunks``
    (open files, the open folder) nearest to it."""
    prefix, suffix = text_around(document, start, end, CONTEXT_CHARS)
    return {"prefix": prefix, "suffix": suffix, "context": chunks.nearest(prefix, suffix), "file_name": file_name}


class EditStarter:
    """Turns the editor's selections or gaps into requests and starts a session that runs them."""

    def __init__(self, worker: WorkerAdapter, options: InfillOptions, keys: SessionKeys):
        self.worker = worker
        self.options = options
        self.keys = keys
        # chunks of the other open files and the open folder, for the project context; set by the window
        self.project_chunks: Callable[[CodeEditor], ProjectChunks] = lambda editor: ProjectChunks()
        # the file name of the editor's document ("" when untitled); set by the window
        self.file_name: Callable[[CodeEditor], str] = lambda editor: ""

    def rewrite(self, editor: CodeEditor, strength: float = 1.0, instruction: str | None = None) -> EditSession | None:
        """Rewrite the selection (or infill at the cursor when nothing is selected). With more
        cursors (Ctrl+D, Alt+click) every one of them at once: one region each, one batch."""
        spans = []
        for start, end in sorted({(c.selectionStart(), c.selectionEnd()) for c in (editor.textCursor(), *editor.extra_cursors.cursors)}):
            if not spans or start >= spans[-1][1]:  # a cursor inside another's selection adds nothing
                spans.append((start, end))
        chunks = self.project_chunks(editor)
        requests = [self._rewrite_request(editor, start, end, strength, instruction, chunks) for start, end in spans]
        return self._run(editor, spans, requests)

    def cursor_request(self, editor: CodeEditor, chunks: ProjectChunks, strength: float) -> InfillRequest | None:
        """What Ctrl+K at ``editor``'s one cursor (or on its selection, rewritten at ``strength``) would
        ask, project context (``chunks``) included, so the prompt warmed is the one Ctrl+K sends; None
        with more cursors or a selection over ``WARMED_SELECTION_CHARS`` (Select All in a large file
        is no edit to come)."""
        cursor = editor.textCursor()
        if editor.extra_cursors.cursors or cursor.selectionEnd() - cursor.selectionStart() > WARMED_SELECTION_CHARS:
            return None
        start, end = cursor.selectionStart(), cursor.selectionEnd()
        return self._rewrite_request(editor, start, end, strength if end > start else 1.0, None, chunks)

    def _rewrite_request(self, editor: CodeEditor, start: int, end: int, strength: float, instruction: str | None,
                         chunks: ProjectChunks) -> InfillRequest:
        """The request for the Qt span ``start``-``end`` of ``editor``'s document: its original, what
        is around it, and the project's ``chunks`` nearest to it."""
        document = editor.document()
        return region_request(surroundings(document, start, end, chunks, self.file_name(editor)), text_between(document, start, end),
                              self.options.max_new_tokens, strength, instruction=instruction or None,
                              steps=self.options.steps, n_alternatives=self.options.alternatives,
                              sampler_bound=self.options.sampler_bound)

    def fill_gaps(self, editor: CodeEditor) -> EditSession | None:
        """Fill every [MASK] / [MASK:n] gap of the document in one run; None with a message if none."""
        text = document_text(editor.document())
        try:
            gaps = find_gaps(text, self.options.gap_tokens)
        except ValueError as error:
            raise ValueError(f"Cannot fill gaps: {error}") from None
        if not gaps:
            raise ValueError("No [MASK] gaps in this document.")
        template = TemplateRequest(
            segments=segments_of(text, gaps),
            max_new_tokens=tuple(gap.max_new_tokens for gap in gaps),
            steps=self.options.steps,
            file_name=self.file_name(editor),
        )
        return self._run(editor, [(position_of(text, gap.start), position_of(text, gap.end)) for gap in gaps], template)

    def again(self, session: EditSession) -> EditSession | None:
        """Try Again: put the originals back and run the first run's request once more in a new
        session over them: the same settings (strength, instruction, lengths, options), the text
        around each region and the project context read as they are now, and the alternatives after
        those shown (a deterministic first result would only come back). None when the session has
        ended (an empty result) and the text has changed since."""
        spans = session.retry_spans()
        if spans is None:
            return None
        session.reject()
        editor = session.editor
        if isinstance(session.request, TemplateRequest):
            template, text = session.request, document_text(editor.document())
            gaps = [Gap(index_of(text, start), index_of(text, end), tokens)
                    for (start, end), tokens in zip(spans, template.max_new_tokens)]
            return self._run(editor, spans, replace(template, segments=segments_of(text, gaps),
                                                    first_alternative=template.first_alternative + 1))
        chunks = self.project_chunks(editor)
        requests = [replace(request, **surroundings(editor.document(), start, end, chunks, request.file_name),
                            first_alternative=request.first_alternative + request.n_alternatives)
                    for request, (start, end) in zip(session.request, spans)]
        return self._run(editor, spans, requests)

    def rest_session(self, editor: CodeEditor, request: Sequence[InfillRequest]) -> EditSession:
        """A session at the cursor for what Accept Word left of a result (``EditSession.offer``
        shows it); Try Again runs ``request`` there, with the text around it as it is now."""
        position = editor.textCursor().position()
        session = self._session(editor, [(position, position)], None)
        session.request = request
        return session

    def _run(self, editor: CodeEditor, spans, work: Sequence[InfillRequest] | TemplateRequest) -> EditSession | None:
        if self.worker.error is not None:
            raise ValueError(f"No model: {self.worker.error}")
        steps = work.steps if isinstance(work, TemplateRequest) else work[0].steps
        session = self._session(editor, spans, steps)
        return session if session.run(self.worker, work) else None

    def _session(self, editor: CodeEditor, spans, steps: int | None) -> EditSession:
        return EditSession(editor, spans, steps, self.options.underline_low_confidence, self.keys, self.options.review_diff)
