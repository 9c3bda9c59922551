"""Suggestions: retrieval-started block denoising, reranked, for a backend that can score text.

``SuggestingBackend`` wraps a loaded backend and keeps its API. For each infill request it
retrieves candidate lines (``sfumato.model.retrieval``: the document, the project context, the corpus
table); the best few may also start a rewrite at partial ``strength`` (the engine pins the kept
tokens), and fresh denoised samples join the same batch. Everything is still block denoising:
retrieval only chooses where some rows start. When the batch is done, every text (the retrieved
ones unchanged, the denoised ones, and for a rewrite the region's current text) is scored by the
model and the cheap checks and ordered by ``sfumato.model.rerank``. The final draft lists them best first
and says whether the best is ``confident``; the editor writes nothing when it is not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sfumato.model.api import Candidate, CancelFlag, Draft, InfillRequest, TemplateRequest, TokenState
from sfumato.model.candidate_score import mean_log_probs
from sfumato.model.checks import bracket_errors, parses, unknown_names, window
from sfumato.model.gap_fill import fill_gaps_separately
from sfumato.model.line_table import LineTable, normalise
from sfumato.model.phrase_table import PhraseTable
from sfumato.model.prose_model import ProseModelLoader, prose_model_path
from sfumato.model.rerank import DEFAULT, Alternative, Evidence, Ranker
from sfumato.model.retrieval import cursor_of, reads_as_prose, retrieve
from sfumato.model.token_text import split_text
from sfumato.model.tokenizer import encode_text

TABLE_FOLDER = "lines"
PHRASE_FOLDER = "phrases"
RANKER_FILE = "rerank.json"
REWRITE_FIRST = ("original", "started")  # in a rewrite, only these may rank before the selection: it and the model's rewrite of it


@dataclass(frozen=True)
class Settings:
    retrieved: int = 6  # retrieved candidates that enter the ranking as they are
    started: int = 0  # of them, how many also start a denoising row (did not pay on dev: off)
    strength: float = 0.3  # the share of a started candidate's tokens renoised
    fresh: int = 1  # fresh denoised samples per request when retrieval found something
    prose_proposals: int = 3  # of the prose model's proposals for a prose gap, how many are ranked


@dataclass
class Plan:
    """One request: what was retrieved, and its rows in the inner batch."""

    request: InfillRequest
    retrieved: list[Alternative]
    inner: list[InfillRequest]
    origins: list[str]  # per inner request: "sample" or "started"


class SuggestingBackend:
    """A backend whose results are retrieved and denoised alternatives, ranked. Attributes it does
    not define (the model, tokenizer, prompt cache) are the wrapped backend's."""

    def __init__(self, backend, table: LineTable | None = None, ranker: Ranker = DEFAULT,
                 settings: Settings = Settings(), phrases: PhraseTable | None = None,
                 prose_model: ProseModelLoader | None = None):
        self.backend = backend
        self.table = table
        self.phrases = phrases
        self.prose_model = prose_model
        self.ranker = ranker
        self.settings = settings

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def wait_for_prose_model(self) -> None:
        """Block until the prose model (if any) has loaded or failed: for measurements."""
        if self.prose_model is not None:
            self.prose_model.wait()

    def watch_optional(self, report: Callable[[str], None]) -> None:
        """``report`` the prose model's load failure in one line, now or when it happens."""
        if self.prose_model is not None:
            self.prose_model.watch(report)

    def stream(self, requests: Sequence[InfillRequest], cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        plans = [self.plan(request) for request in requests]
        per_plan: list[list[Draft]] = [[] for _ in plans]
        if any(plan.retrieved for plan in plans):  # something to show before the first pass
            yield tuple(self._preview(plan, []) for plan in plans)
        for final, per_plan in self.denoise(plans, cancel):
            if not final:
                yield tuple(self._preview(plan, drafts) for plan, drafts in zip(plans, per_plan))
        if cancel is not None:
            cancel.raise_if_set()
        plans = [self.with_prose_model(plan) for plan in plans]
        if cancel is not None:
            cancel.raise_if_set()
        yield tuple(self._ranked(plan, drafts) for plan, drafts in zip(plans, per_plan))

    def denoise(self, plans: Sequence[Plan], cancel: CancelFlag | None = None) -> Iterator[tuple[bool, list[list[Draft]]]]:
        """The rows of all ``plans`` as one batch: after every pass, (final, each plan's drafts)."""
        inner = [request for plan in plans for request in plan.inner]
        if not inner:
            return
        for drafts in self.backend.stream(inner, cancel):
            per_plan, start = [], 0
            for plan in plans:
                per_plan.append(list(drafts[start : start + len(plan.inner)]))
                start += len(plan.inner)
            yield drafts[0].final, per_plan

    def stream_template(self, template: TemplateRequest, cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        """Each gap as its own request, so that every gap gets candidates and ranking."""
        return fill_gaps_separately(self, template, cancel)

    # ---- planning -----------------------------------------------------------------------------

    def plan(self, request: InfillRequest) -> Plan:
        """What to retrieve and which rows to denoise for ``request``."""
        s = self.settings
        if request.instruction is not None:
            return Plan(request, [], [request], ["sample"])
        if request.is_rewrite:
            original = Alternative(request.init_text, "original")
            return Plan(request, [original, *self.retrieved_for_selection(request)], [request], ["started"])
        retrieved = self.retrieved(request)
        inner, origins = [], []
        for alternative in retrieved[: s.started]:
            inner.append(dataclasses.replace(request, init_text=alternative.text, strength=s.strength, n_alternatives=1))
            origins.append("started")
        fresh = request.n_alternatives if not retrieved else min(s.fresh, request.n_alternatives)
        if fresh:
            inner.append(dataclasses.replace(request, n_alternatives=fresh))
            origins.append("sample")
        return Plan(request, retrieved, inner, origins)

    def retrieved(self, request: InfillRequest) -> list[Alternative]:
        found = retrieve(request.prefix, request.suffix, request.context, self.table, self.settings.retrieved, self.phrases)
        return [Alternative(r.text, r.kind, r.source, r.count, i == 0) for i, r in enumerate(found)]

    def retrieved_for_selection(self, request: InfillRequest) -> list[Alternative]:
        """For a selection within one line, what retrieval proposes for its place, with the
        selection's own leading and trailing blanks: ranked after the selection and the model's
        rewrite, so offered as guesses (a multi-line selection gets the model's rewrite only:
        retrieval proposes lines)."""
        frame = region_frame(request)
        if frame is None:
            return []
        prefix, suffix, lead, trail = frame
        around = dataclasses.replace(request, prefix=prefix, suffix=suffix)
        return [dataclasses.replace(a, text=lead + a.text.strip() + trail) for a in self.retrieved(around)
                if a.origin != "repeat"]  # the line above, written over the selected line, is no rewrite

    def with_prose_model(self, plan: Plan) -> Plan:
        """``plan`` with the prose model's proposals for a gap inside a sentence (an infill, or a
        selection within one line, where they are offered as guesses), ahead of the retrieved
        phrases they were scored with; as it was when there is no prose model, it is not loaded
        yet, or the region is not prose."""
        model = self.prose_model.get() if self.prose_model is not None else None
        request = plan.request
        frame = region_frame(request) if model is not None and request.instruction is None else None
        if frame is None:
            return plan
        prefix, suffix, lead, trail = frame
        if not reads_as_prose(cursor_of(prefix, suffix)):
            return plan
        phrases = [a.text.strip() for a in plan.retrieved if a.source == "phrases"]
        proposals = model.propose(prefix, suffix, phrases)[: self.settings.prose_proposals]
        written = [Alternative(lead + text + trail, "prose", "prose_model", 0, i == 0, share)
                   for i, (text, share) in enumerate(proposals)]
        kept = plan.retrieved[:1] if request.is_rewrite else []  # the selection stays first
        return dataclasses.replace(plan, retrieved=kept + written + plan.retrieved[len(kept) :])

    # ---- drafts -------------------------------------------------------------------------------

    def _preview(self, plan: Plan, drafts: list[Draft]) -> Draft:
        """While the batch denoises: the best retrieved text if any, else the first denoising row."""
        if plan.retrieved and plan.retrieved[0].origin != "original" or not drafts:
            text = plan.retrieved[0].text if plan.retrieved else ""
            step, passes, tokens = (drafts[0].batch_passes, drafts[0].forward_passes, drafts[0].generated_tokens) if drafts else (0, 0, 0)
            return Draft(step, (self._candidate(text),), False, passes, tokens)
        return drafts[0]

    def alternatives(self, plan: Plan, drafts: Sequence[Draft]) -> list[Alternative]:
        """Every distinct text for the region: retrieved (or the current text), then denoised."""
        alternatives = list(plan.retrieved)
        for draft, origin in zip(drafts, plan.origins):
            alternatives += [Alternative(candidate.text, origin) for candidate in draft.candidates]
        unique: dict[str, Alternative] = {}
        for alternative in alternatives:
            unique.setdefault(normalise(alternative.text), alternative)
        return list(unique.values())

    def _ranked(self, plan: Plan, drafts: list[Draft]) -> Draft:
        alternatives = self.alternatives(plan, drafts)
        if not alternatives:
            return Draft(0, (Candidate("", ()),), True, confident=False)
        evidence = self.evidence(plan.request, alternatives)
        scored = sorted(((self.ranker.log_odds(a, e), a) for a, e in zip(alternatives, evidence)),
                        key=lambda pair: -pair[0])
        if plan.request.is_rewrite:
            scored = selection_before_found(scored)
        candidates = tuple(self._candidate(a.text, score, a.origin, a.source) for score, a in scored)
        passes = max((draft.forward_passes for draft in drafts), default=0)
        tokens = max((draft.generated_tokens for draft in drafts), default=0)
        step = max((draft.batch_passes for draft in drafts), default=0)
        # a rewrite whose best text is the one already there suggests nothing
        prose = reads_as_prose(cursor_of(plan.request.prefix, plan.request.suffix))
        confident = self.ranker.confident(*scored[0], prose=prose) and scored[0][1].origin != "original"
        return Draft(step, candidates, True, passes, tokens, confident=confident)

    def evidence(self, request: InfillRequest, alternatives: list[Alternative]) -> list[Evidence]:
        """The model's score (when the ranker weighs it) and the checks of each alternative in
        ``request``'s place."""
        texts = [a.text for a in alternatives]
        scored = self.ranker.weights.get("log_prob", 0.0) != 0.0
        log_probs = (mean_log_probs(self.backend, request, texts) if scored else None) or [None] * len(texts)
        parsed = [parses(request.prefix, text, request.suffix) for text in texts]
        python = any(parsed)
        brackets = [bracket_errors(window(request.prefix, text, request.suffix)) for text in texts]
        fewest = min(brackets, default=0)
        return [
            Evidence(lp, ok if python else None, errors - fewest,
                     unknown_names(text, request.prefix, request.suffix, request.context))
            for text, lp, ok, errors in zip(texts, log_probs, parsed, brackets)
        ]

    def _candidate(self, text: str, score: float | None = None, origin: str = "", source: str = "") -> Candidate:
        ids = encode_text(self.backend.tokenizer, text)
        pieces = split_text(self.backend._bytes, ids) if hasattr(self.backend, "_bytes") else [text]
        tokens = tuple(TokenState(piece, 1.0, True) for piece in pieces)
        return Candidate(text, tokens, score=score, origin=origin, source=source)


def region_frame(request: InfillRequest) -> tuple[str, str, str, str] | None:
    """(prefix, suffix, lead, trail) around the text to find for ``request``'s region: for a
    selection within one line, its leading and trailing blanks move into the prefix and suffix (and
    go back around whatever is found); None for a blank or multi-line selection."""
    if not request.is_rewrite:
        return request.prefix, request.suffix, "", ""
    selection = request.init_text
    if not selection.strip() or "\n" in selection.strip():
        return None
    lead = selection[: len(selection) - len(selection.lstrip())]
    trail = selection[len(selection.rstrip()) :]
    return request.prefix + lead, trail + request.suffix, lead, trail


def selection_before_found(scored: list[tuple[float, Alternative]]) -> list[tuple[float, Alternative]]:
    """A rewrite's ranking with whatever was found or proposed for the selection moved after the
    selection itself: offered as guesses, in the ranker's order, never written over it."""
    position = next((i for i, (_, a) in enumerate(scored) if a.origin == "original"), None)
    if position is None:
        return scored
    ahead = [pair for pair in scored[:position] if pair[1].origin in REWRITE_FIRST]
    moved = [pair for pair in scored[:position] if pair[1].origin not in REWRITE_FIRST]
    return ahead + [scored[position]] + moved + scored[position + 1 :]


def with_suggestions(backend, folder: Path | None):
    """``backend`` wrapped for suggestions when its folder ships a ranker fit (``rerank.json``)
    and it can score text; else ``backend`` itself."""
    if folder is None or not (Path(folder) / RANKER_FILE).is_file():
        return backend
    table_folder, phrase_folder = Path(folder) / TABLE_FOLDER, Path(folder) / PHRASE_FOLDER
    table = LineTable(table_folder) if LineTable.exists(table_folder) else None
    phrases = PhraseTable(phrase_folder) if PhraseTable.exists(phrase_folder) else None
    prose = prose_model_path()
    return SuggestingBackend(backend, table, Ranker.load(Path(folder) / RANKER_FILE), phrases=phrases,
                             prose_model=ProseModelLoader(prose) if prose is not None else None)
