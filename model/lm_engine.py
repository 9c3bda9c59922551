"""The embedded engine: a pretrained causal LM adapted to block denoising, behind ``Backend``.

Every draft is one pass of the model over a canvas (``sfumato.model.lm_layout``): the prompt is read once
(and its KV cache kept across requests, ``sfumato.model.prompt_cache``), then each pass reads the canvas
as far as its guesses go (masked positions both ways, the rest left to right) and settles the leftmost
open token, and the tokens after it while the guesses hold (``sfumato.model.lm_settle``:
self-speculative decoding, the text of one token a pass in fewer passes). A canvas that fills up without ``<|endoftext|>`` is committed to the prompt and the next one
starts, until ``max_new_tokens``. A light rewrite proposes fixes and reads them
(``sfumato.model.light_rewrite``); a heavy one writes its least likely lines again (``sfumato.model.line_rewrite``).

The token at the cursor is healed: the prompt ends one token early and the canvas's first token
must begin with that token's text, so a cursor after indentation (which the tokenizer would join
with the next word) does not start the model off the grid it was trained on.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace

import torch

from sfumato.model.api import CancelFlag, Draft, InfillRequest, ModelInfo, TemplateRequest, TokenState
from sfumato.model.gap_cut import SUFFIX_SCORE_TOKENS, gap_queries, is_branched, is_inside_line, rank_branches, row_count
from sfumato.model.gap_fill import gap_request, in_groups
from sfumato.model.gap_scope import indentation
from sfumato.model.light_rewrite import proposals, read_sequences, settle, typed_prior
from sfumato.model.line_rewrite import chosen_lines, line_means, read_log_probs, rewrite_plan, selection_lines, unreachable_cut
from sfumato.model.lm_base import TRAINED_PREFIX
from sfumato.model.lm_cached_keys import CachedKeys
from sfumato.model.lm_drafts import Spent, group_draft, row_states
from sfumato.model.lm_layout import SpecialIds, prompt_ids
from sfumato.model.lm_row import Row, heal_only_tokens, read_end
from sfumato.model.lm_settle import Settler
from sfumato.model.lm_vocabulary import CanvasVocabulary
from sfumato.model.memory import release_freed_heap
from sfumato.model.project_context import CONTEXT_SHARE, context_tokens, document_header
from sfumato.model.prompt_cache import PromptCache
from sfumato.model.rewrite_effect import HEAVY_REWRITE
from sfumato.model.rewrite_parts import part_request, reading_windows, refuse_long_lines, split_selection, text_after
from sfumato.model.template import within_its_line

PREFIX_TOKENS, SUFFIX_TOKENS = TRAINED_PREFIX, 96  # what training shows it (sfumato.model.training.adapt)
CONTEXT_TOKENS = 128  # the most the project's snippets take, before the prefix
MAX_CANVAS = 32
LINE_CANVAS = 16  # the rest of one line rarely needs more; a longer one goes on in the next canvas
PREFILL_CHUNK = 128  # prompt tokens read between two cancel checks
STOP_CHARS, MIN_STOP_CHARS = 16, 4  # how much of the suffix's start ends a text that runs into it
LONGEST_STOP = 200  # of the suffix, what the overlap check reads (its first line)
ALTERNATIVE_TEMPERATURE = 0.8
# On a CPU a pass's cost grows with the positions it reads, and guesses far ahead seldom hold: passes
# shown at most this many guesses write the same text sooner (docs/performance.md, session 40).
CPU_GUESSES = 2


def context_ids(tokenizer, snippets) -> list[int]:
    """The project's snippets as the prompt holds them, before the prefix (training lays them out so too)."""
    return context_tokens(tokenizer, snippets, CONTEXT_SHARE * CONTEXT_TOKENS) if snippets else []


class LmDenoiserBackend:
    """Infill and rewrite with a causal LM adapted to block denoising (one worker owns it)."""

    def __init__(self, model, tokenizer, info: ModelInfo, device: str = "cpu", prefix_tokens: int = PREFIX_TOKENS):
        self.model = model.eval()
        self.tokenizer, self.info, self.device = tokenizer, info, device
        self.prefix_tokens = prefix_tokens  # of the text before the region, the most the prompt holds
        self.special = SpecialIds.of(tokenizer)
        self.vocabulary = CanvasVocabulary(tokenizer, self.special, device)
        self.table = self.vocabulary.table
        self.settler = Settler(self.vocabulary, self.special, CPU_GUESSES if device == "cpu" else None)
        self.prompt_cache = PromptCache()
        self._prompt_logits: tuple[tuple[int, ...], torch.Tensor | None] = ((), None)
        self._chosen: tuple[tuple, list[int]] = ((), [])  # a heavy rewrite's lines chosen, by what they depend on
        self.keys = CachedKeys(self.special.end, device)

    # ---- the Backend protocol -------------------------------------------------------------

    def stream(self, requests: Sequence[InfillRequest], cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        """A long selection is rewritten part after part (``sfumato.model.rewrite_parts``); every
        request's current part is a row of one batch."""
        try:
            yield from self._stream(requests, cancel)
        finally:  # glibc keeps a request's freed logits resident for reuse: 150-250 MB more after each on Gemma
            release_freed_heap()

    def _stream(self, requests: Sequence[InfillRequest], cancel: CancelFlag | None) -> Iterator[tuple[Draft, ...]]:
        leads, plans = zip(*(self._plan(r) for r in requests))
        written = [[[TokenState(lead, 1.0, True)] if lead else [] for _ in range(r.n_alternatives)]  # states of the parts done
                   for lead, r in zip(leads, requests)]
        spent = [Spent() for _ in requests]
        drafts: list[Draft] = [None] * len(requests)  # type: ignore[list-item]
        plans, index, offset = list(plans), 0, 0
        # lines at a blank line are branched (gap_cut), but a heavy rewrite's alternatives are sampled
        lines = [lead is None or r.n_alternatives == 1 for lead, r in zip(leads, requests)]
        with torch.inference_mode():
            while index < max(map(len, plans)):
                live = [i for i, plan in enumerate(plans) if index < len(plan)]
                parts = [self._parts(requests[i], plans[i], index, written[i], leads[i] is not None, lines[i]) for i in live]
                after = {i: text_after(plans[i], index) for i in live}  # the same for every pass of the round
                groups = [[self._row(part, k, lines[i], *((plans[i][index][0], len(after[i])) if leads[i] is not None else ()))
                           for k, part in enumerate(group)] for i, group in zip(live, parts)]
                rows = [row for group in groups for row in group]
                passes = 0
                for passes in self._denoise(rows, [group[0] for group in parts], groups, cancel):
                    done = all(row.done for row in rows)
                    for i, group in zip(live, groups) if done else ():
                        if leads[i] is not None and (cut := unreachable_cut(plans[i], index, [requests[i].prefix.rsplit("\n", 1)[-1] + "".join(
                                s.text for s in (*done, *self._states(row))) for done, row in zip(written[i], group)])):
                            plans[i], after[i] = cut, text_after(cut, index)
                    final = done and index == max(map(len, plans)) - 1
                    for i, group in zip(live, groups):
                        drafts[i] = group_draft(group, [self._states(row) for row in group], offset + passes, final,
                                                written[i], after[i], spent[i])
                    yield tuple(replace(d, batch_passes=offset + passes, final=final) for d in drafts)
                offset += passes
                for i, group in zip(live, groups):
                    for k, row in enumerate(group):
                        written[i][k] += [*self._states(row), TokenState(plans[i][index][1], 1.0, True)]
                    spent[i].add(group[0], self._states(group[0]))
                index += 1

    def _count(self, text: str) -> int:
        return len(self._encode(text))

    def _plan(self, request: InfillRequest, cancel: CancelFlag | None = None) -> tuple[str | None, list[tuple[str | None, str]]]:
        """(the text kept before the first part, for a heavy rewrite; None otherwise, the parts):
        an infill is one part; a light rewrite is cut into parts of a few lines; a heavy one
        writes its least likely lines again (``sfumato.model.line_rewrite``), the lines it chose
        for the last such request kept (a warm chooses them ahead of Ctrl+K)."""
        if not request.is_rewrite:
            return None, [(None, "")]
        lines = selection_lines(request.init_text)
        if request.strength < HEAVY_REWRITE or not any(line.strip() for line, _ in lines):
            parts = split_selection(request.init_text, self._count)
            refuse_long_lines([part for part, _ in parts], self._count)
            return None, parts
        refuse_long_lines([line for line, _ in lines], self._count)  # whether or not the lines are read to choose
        key = (request.prefix, request.suffix, request.context, request.file_name, request.init_text, request.strength)
        if self._chosen[0] != key:
            self._chosen = (key, chosen_lines(lines, lambda: self._line_means(request, cancel), request.strength))
        return rewrite_plan(lines, self._chosen[1])

    def _line_means(self, request: InfillRequest, cancel: CancelFlag | None = None) -> list[float]:
        """Each line of a rewrite's selection: the mean log-probability of its tokens, read after the prompt."""
        means: list[float] = []
        for before, window, after in reading_windows(request.init_text, self._count):  # each after its own prompt
            prompt, heal = self._prompt(replace(request, prefix=request.prefix + before, suffix=after + request.suffix))
            ids = self._encode(heal.decode("utf-8", "replace") + window)
            with torch.inference_mode():
                log_probs = read_log_probs(self.model, *self._read_prompt(prompt, cancel), len(prompt), ids)
            means += line_means(selection_lines(window), [len(self.table[t]) for t in ids], log_probs, len(heal))
        return means

    def _first_prompt(self, request: InfillRequest, cancel: CancelFlag | None = None) -> list[int]:
        """The prompt ``stream`` reads first for ``request`` once it has chosen a heavy rewrite's
        lines (which this does, reading them where some are kept: ``_plan`` keeps the choice): an
        infill's own, a rewrite's first part's."""
        if not request.is_rewrite:
            return self._prompt(request)[0]
        lead, plan = self._plan(request, cancel)
        return self._prompt(part_request(request, plan, 0, lead or "", lead is not None))[0]

    def _parts(self, request: InfillRequest, plan: list[tuple[str | None, str]], index: int,
               written: list[list[TokenState]], heavy: bool, lines: bool) -> list[InfillRequest]:
        """Each row's request for part ``index``: one an alternative, or for a branched part (``lines``:
        a line at a blank line may be) one a branch."""
        parts = [part_request(request, plan, index, "".join(state.text for state in states), heavy) for states in written]
        return parts + [parts[0]] * (row_count(parts[0], lines) - len(parts))

    def stream_template(self, template: TemplateRequest, cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        """Every gap is a canvas of one batch (``REQUESTS_AT_ONCE`` at a time: ``gap_fill.in_groups``), its prompt
        the template around it (other gaps empty). A gap with text before or after it on its line (``math.[MASK](16)``,
        ``ubuntu-[MASK]``) is filled within the line, as Ctrl+K at a cursor is; a gap alone on its line may write several."""
        def request_at(gap: int) -> InfillRequest:
            request = gap_request(template, gap)
            return replace(request, first_alternative=template.first_alternative,
                           one_line=within_its_line(request.prefix, request.suffix))

        yield from in_groups(self.stream, len(template.max_new_tokens), request_at, cancel)

    # ---- building rows --------------------------------------------------------------------

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids if text else []

    def _prompt(self, request: InfillRequest) -> tuple[list[int], bytes]:
        """(the prompt's ids, the healed text: the prefix's last token, which the canvas spells).
        Project snippets (``request.context``) go before the prefix, as text the file follows, and
        right before it the document's name (``project_context.document_header``)."""
        prefix = self._encode(request.prefix[-4 * self.prefix_tokens :])[-self.prefix_tokens :]
        suffix = self._encode(request.suffix[: 4 * SUFFIX_TOKENS])[:SUFFIX_TOKENS]
        heal = self.table[prefix.pop()] if prefix else b""
        context = context_ids(self.tokenizer, request.context) + self._encode(document_header(request.file_name))
        return prompt_ids(self.special, context + prefix, suffix), heal

    def _row(self, request: InfillRequest, index: int, lines: bool = True, replaces: str | None = None,
             selection_rest: int | None = None) -> Row:
        """Row ``index`` of a request: its alternative ``first_alternative + index`` (the first greedy,
        the others sampled), or for a branched request (``gap_cut.is_branched``) the branch of its
        first word's ``index``-th choice; a heavy rewrite's line ``replaces`` a line, the selection
        holding ``selection_rest`` characters of the suffix after it."""
        prompt, heal = self._prompt(request)
        alternative = request.first_alternative + index
        seed = (request.seed if request.seed is not None else 0) * 1000 + alternative
        bar = 1.0 if request.sampler_bound is None else math.exp(-request.sampler_bound)
        stop = request.suffix.lstrip()[:STOP_CHARS]
        # a rewrite of text without a line break writes none (it would go on into the next lines)
        no_breaks = request.is_rewrite and "\n" not in request.init_text
        if request.one_line or no_breaks:  # only the suffix's first line can be run into
            stop = stop.split("\n", 1)[0]
        blank_line = not within_its_line(request.prefix, request.suffix)
        inside_line, branched = is_inside_line(request), is_branched(request, lines)
        whole_line = branched and not inside_line
        must_write = not request.is_rewrite and (request.must_write or request.one_line and (blank_line or inside_line))
        avoid = self.vocabulary.starting(self._next_line(request)) if must_write else False
        avoid_healed = self.vocabulary.repeating(self._next_line(request), heal) if must_write and inside_line else avoid
        lone_space = (self.vocabulary.space_joins_word and heal.endswith(b" ")
                      and not request.prefix.rstrip(" ").endswith((".", "!", "?")))
        row = Row(prompt, heal, request.max_new_tokens, request.one_line, no_breaks=no_breaks, must_write=must_write,
                   avoid=avoid, avoid_healed=avoid_healed, lone_space=lone_space,
                   temperature=0.0 if alternative == 0 or branched else ALTERNATIVE_TEMPERATURE,
                   branch=branched, first_word_rank=index if branched else 0, whole_line=whole_line, replaces=replaces,
                   selection_rest=selection_rest,
                   generator=torch.Generator().manual_seed(seed), accept=bar,
                   stop=stop if len(stop.strip()) >= MIN_STOP_CHARS else "", stop_space=request.suffix[:1].isspace(),
                   scope=0 if request.one_line or request.is_rewrite else indentation(request.prefix.rsplit("\n", 1)[-1]),
                   lines=not (request.one_line or request.is_rewrite),
                   before=request.prefix.rsplit("\n", 1)[-1], after=request.suffix[:LONGEST_STOP],
                   gap_suffix=self._encode(request.suffix[: 4 * SUFFIX_SCORE_TOKENS])[:SUFFIX_SCORE_TOKENS] if branched else [])
        if request.is_rewrite:
            row.canvas = self._encode(heal.decode("utf-8", "replace") + request.init_text)  # a fix keeps its length
            row.masked, row.confidence = [False] * len(row.canvas), [1.0] * len(row.canvas)
            row.budget = len(row.canvas)
        else:
            self._open(row, min(LINE_CANVAS if request.one_line else MAX_CANVAS, row.budget + 1))
        return row

    @staticmethod
    def _next_line(request: InfillRequest) -> str:
        return next((line.strip() for line in request.suffix.split("\n") if line.strip()), "")

    def _open(self, row: Row, size: int) -> None:
        size = max(1, size)
        row.canvas = [self.special.mask] * size
        row.masked = [True] * size
        row.confidence = [0.0] * size
        row.guess = {}
        row.cached = 0

    # ---- the passes -----------------------------------------------------------------------

    def _denoise(self, rows: list[Row], requests, groups, cancel) -> Iterator[int]:
        """Run passes over every row until all are done; yield the pass count after each."""
        passes = 0
        last_logits, cache = self._prefill(rows)
        prompt_logits = last_logits
        if any(request.is_rewrite for request in requests):
            rewrites = [r for request, group in zip(requests, groups) for r in [request] * len(group)]
            passes += self._read_rewrites(rows, rewrites, last_logits, cache)
            yield passes
            while any(row.fixing for row in rows):
                passes += self._read_rewrites(rows, rewrites, last_logits, cache, again=True)
                yield passes
        while not all(row.done for row in rows):
            if cancel is not None:
                cancel.raise_if_set()
            logits, read = self._canvas_pass(rows, last_logits, cache)
            for b, row in enumerate(rows):
                if not row.done:
                    row.passes += 1
                    self.settler.settle(row, logits[b])
            last_logits = self._keep_settled(rows, read, cache, last_logits)
            del logits, read  # [rows, canvas, vocabulary] twice: gone before a gap's cut is scored
            release_freed_heap()  # what a pass freed: a pass's blocks differ in size from the next's
            passes += 1
            if all(row.done for row in rows):
                self._cut_gaps(rows, prompt_logits, cache)
                for request, group in zip(requests, groups):
                    rank_branches(group, request, lambda row: "".join(state.text for state in self._states(row)))
            elif any(self.settler.goes_on(row) for row in rows):
                last_logits = self._commit(rows, cache, last_logits)
            yield passes

    def warm(self, request: InfillRequest, cancel: CancelFlag | None = None) -> None:
        """Read the prompt ``stream`` reads first for ``request`` into the prompt cache ahead of time
        (the cursor rested there, or on a selection), so Ctrl+K starts at its first pass. A cancel
        keeps what was read so far."""
        with torch.inference_mode():
            self._read_prompt(self._first_prompt(request, cancel), cancel)  # only the prompt: no row is denoised

    def _read_prompt(self, prompt: list[int], cancel: CancelFlag | None = None):
        """(logits after the prompt [1, V], cache of it, batch of one), reading only what the
        prompt cache does not hold, in chunks with a cancel check between them."""
        cache, held = self.prompt_cache.lookup(prompt, 1)
        if cache is not None and held == len(prompt):
            if self._prompt_logits[0] == tuple(prompt):
                return self._prompt_logits[1], cache
            cache, held = None, 0  # held whole but without its logits: read it again
        logits = None
        while held < len(prompt):
            if cancel is not None and cancel.is_set():
                if cache is not None:
                    self.prompt_cache.store(prompt[:held], cache)
                cancel.raise_if_set()
            new = prompt[held : held + PREFILL_CHUNK]
            mask = torch.ones(1, 1, len(new), held + len(new), dtype=torch.bool, device=self.device)
            mask[:, :, :, held:] = torch.tril(mask[0, 0, :, held:])
            out = self.model(input_ids=torch.tensor([new], device=self.device), attention_mask=mask,
                             position_ids=torch.arange(held, held + len(new), device=self.device)[None],
                             cache=cache, use_cache=True, logits_to_keep=1)  # the vocabulary only after the last
            cache, held, logits = out.cache, held + len(new), out.logits[:, -1].float()
        self.prompt_cache.store(prompt, cache)
        self._prompt_logits = (tuple(prompt), logits)
        return logits, cache

    def _prefill(self, rows: list[Row]):
        """Read every row's prompt (left-padded to one length) into one cache; (last logits [R, V], cache).

        Rows with one prompt (a request's alternatives) go through the prompt cache: an identical
        prompt costs no pass at all, one that starts the same way reads only its new tokens."""
        prompts = [row.prompt for row in rows]
        self.keys.start(prompts)
        if all(p == prompts[0] for p in prompts):
            logits, cache = self._read_prompt(prompts[0])
            if len(rows) > 1:
                cache.batch_repeat_interleave(len(rows))
            return logits.expand(len(rows), -1), cache
        ids, mask, positions = self.keys.padded_prompts(prompts)
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        return out.logits[:, -1].float(), out.cache

    def _canvas_pass(self, rows: list[Row], next_logits: torch.Tensor, cache, both_ways: bool = False):
        """One pass over every open row's canvas after its cached start (``Row.cached``): ([R, C, V]
        the logits that predict each canvas position, i-1 predicting i, zero where not read; what
        ``_keep_settled`` needs). An open position reads its guess, if any; a settled or guessed
        one reads the canvas left to right, a masked one both ways (``sfumato.model.lm_settle``);
        ``both_ways``: every position reads the whole canvas (a rewrite's text read as the fix
        examples trained it). A row that speculates is read only up to its first masked position
        without a guess (``read_end``). ``next_logits`` [R, V] predict each row's first position not cached."""
        tails = [[] if row.done else [row.guess.get(i, token) for i, token in enumerate(row.canvas)][row.cached : read_end(row, both_ways)]
                 for row in rows]
        ids, widths = self.keys.tails(tails)
        width = ids.shape[1]
        reads_left = [[not both_ways and (not row.masked[i] or i in row.guess) for i in range(row.cached, row.cached + w)]
                      for row, w in zip(rows, widths)]
        out_logits = None
        if width:  # (a canvas's first pass reads nothing: the prompt's logits predict its first token)
            out_logits = self.model(input_ids=ids, attention_mask=self.keys.tail_mask(widths, width, reads_left),
                                    position_ids=self.keys.positions(0, width), cache=cache, use_cache=True).logits
        logits = torch.zeros(len(rows), max(len(row.canvas) for row in rows), next_logits.shape[-1], device=self.device)
        for b, (row, w) in enumerate(zip(rows, widths)):
            if not row.done and row.cached < len(row.canvas):
                logits[b, row.cached] = next_logits[b]
            if w:  # the last position read predicts the one after it, if the canvas has one
                n = min(w, len(row.canvas) - row.cached - 1)
                logits[b, row.cached + 1 : row.cached + 1 + n] = out_logits[b, :n].float()
        return logits, (ids, widths, out_logits)

    def _canvas_logits(self, rows: list[Row], next_logits: torch.Tensor, cache, both_ways: bool = False) -> torch.Tensor:
        """``_canvas_pass``'s logits, the cache left as it was."""
        logits, (ids, _, _) = self._canvas_pass(rows, next_logits, cache, both_ways)
        if ids.shape[1]:
            cache.crop(-ids.shape[1])
        return logits

    def _keep_settled(self, rows: list[Row], read, cache, next_logits: torch.Tensor) -> torch.Tensor:
        """After a pass has settled its tokens: keep in the cache the keys and values of each row's
        leading positions that the pass read left to right with the tokens they now hold (so they
        read only the right text), and drop the rest. Later passes read only the canvas after them:
        the same logits over fewer positions. Returns the logits that predict each row's first
        position not cached."""
        ids, widths, out_logits = read
        kept = []
        for b, row in enumerate(rows):
            n = 0
            while (n < widths[b] and row.cached + n < len(row.canvas) and not row.masked[row.cached + n] and int(ids[b, n]) != self.special.mask
                   and int(ids[b, n]) == row.canvas[row.cached + n]):
                n += 1
            kept.append(n)
        keep = max(kept)
        if ids.shape[1] > keep:
            cache.crop(keep - ids.shape[1])
        added = torch.zeros(len(rows), keep, dtype=torch.bool, device=self.device)
        logits = next_logits.clone()
        for b, n in enumerate(kept):
            if n:
                added[b, :n] = True
                logits[b] = out_logits[b, n - 1].float()
                rows[b].cached += n
        self.keys.add(added)
        return logits

    def _commit(self, rows: list[Row], cache, next_logits: torch.Tensor) -> torch.Tensor:
        """Read every full canvas's uncached rest into the prompt (causally) and open the next canvas there."""
        going = [self.settler.goes_on(row) for row in rows]
        ids, widths = self.keys.tails([row.canvas[row.cached :] if go else [] for row, go in zip(rows, going)])
        width = ids.shape[1]
        logits = next_logits.clone()
        if width:
            out = self.model(input_ids=ids, attention_mask=self.keys.tail_mask(widths, width, [[True] * w for w in widths]),
                             position_ids=self.keys.positions(0, width), cache=cache, use_cache=True)
            self.keys.add_widths(widths)
            for b, w in enumerate(widths):
                if w:
                    logits[b] = out.logits[b, w - 1].float()
        for row, go in zip(rows, going):
            if go:
                row.written += row.canvas
                row.written_confidence += row.confidence
                row.budget -= len(row.canvas)
                self._open(row, min(MAX_CANVAS, row.budget + 1))
        return logits

    def _cut_gaps(self, rows: list[Row], prompt_logits: torch.Tensor, cache) -> None:
        """A gap inside a line ends at the word start the model finds the suffix likeliest after
        (``sfumato.model.gap_cut``): one forward pass over the cached prompt for every such row."""
        ends = (self.special.end, self.special.mask)
        queries = {b: q for b, row in enumerate(rows) if row.gap_suffix and (q := gap_queries(row, self.table, self._encode, ends))}
        if not queries:
            return
        hidden = self._read_queries(queries, len(rows), self.keys.prompt_width, cache)
        for b, q in queries.items():
            cut, rows[b].score = q.best(prompt_logits[b], hidden[b, : len(q.ids)], self.model.lm_head)
            if not rows[b].whole_line:
                rows[b].cut, rows[b].cut_chars = cut.keep, cut.drop

    def _read_queries(self, queries: dict, rows: int, prompt: int, cache) -> torch.Tensor:
        """One forward pass over the cached prompt for every row's queries (``ids``, ``offsets``
        and ``mask``: which query sees which); their last hidden states [R, L, H] (the vocabulary's
        logits are made a few positions at a time: ``sfumato.model.log_probs``). Cached tokens past
        ``prompt`` (committed canvases) are not seen."""
        width, cached = max(len(q.ids) for q in queries.values()), self.keys.width
        ids = torch.full((rows, width), self.special.end, device=self.device)
        offsets = torch.zeros(rows, width, dtype=torch.long, device=self.device)
        mask = self.keys.key_mask(width)
        mask[:, :, :, prompt:] = False
        mask[:, :, :, cached:] = torch.eye(width, dtype=torch.bool, device=self.device)
        for b, q in queries.items():
            ids[b, : len(q.ids)] = torch.tensor(q.ids)
            offsets[b, : len(q.ids)] = torch.tensor(q.offsets)
            mask[b, 0, : len(q.ids), cached : cached + len(q.ids)] = q.mask
        positions = self.keys.positions_after(prompt, offsets)
        out = self.model.model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True)
        cache.crop(-width)
        return out.last_hidden_state

    def _read_rewrites(self, rows: list[Row], requests: list[InfillRequest], last_logits, cache, again: bool = False) -> int:
        """Score a rewrite's selection in place: a light rewrite takes the likeliest of the denoiser's
        proposed fixes (``sfumato.model.light_rewrite``), ``again`` for those still fixing; at strength
        0 the selection stays. Returns the passes run."""
        logits = self._canvas_logits(rows, last_logits, cache, both_ways=True)
        light: dict[int, list[list[int]]] = {}
        for b, (row, request) in enumerate(zip(rows, requests)):
            if not request.is_rewrite or (again and not row.fixing):
                continue
            row.passes += 1
            healed = heal_only_tokens(row, self.table)  # the prompt's text, not the selection's: pinned
            if request.strength == 0:
                row.done = True
                continue
            blocked = self.vocabulary.blocked(len(row.canvas), row.no_breaks)
            blocked[:, self.special.end] = True  # a deletion is proposed as one (only inside a word)
            writable = logits[b, : len(row.canvas)].softmax(-1).masked_fill(blocked, 0.0)
            light[b] = proposals(row.canvas, writable, healed, self.table, self._encode, row.heal)
        return 1 + (self._choose(rows, requests, light, last_logits, cache) if light else 0)

    def _choose(self, rows: list[Row], requests: list[InfillRequest], light: dict[int, list[list[int]]], last_logits, cache) -> int:
        """Every light rewrite's sequences read causally after its prompt, each followed by the suffix's
        start (``light_rewrite.read_sequences``); a row takes the likeliest. Returns the readings run."""
        suffixes = {b: self._encode(requests[b].suffix[: 4 * SUFFIX_SCORE_TOKENS])[:SUFFIX_SCORE_TOKENS] for b in light}
        read = lambda queries: self._read_queries(queries, len(rows), self.keys.width, cache)
        results = read_sequences(light, suffixes, read, self.model.lm_head, last_logits,
                                 {b: typed_prior(requests[b].strength) for b in light})
        for b, (scores, token_probs, readings) in results.items():
            settle(rows[b], light[b], torch.tensor(scores), token_probs, readings)
        return max(readings for _, _, readings in results.values())

    def _states(self, row: Row) -> tuple[TokenState, ...]:
        return row_states(row, self.table, self.special.end)
