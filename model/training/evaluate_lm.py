"""The issue-22 figures: held-out edits (whole packages and prose sources never trained on),
the adapted LM beside the base model's own left-to-right greedy.

    python -m sfumato.model.training.evaluate_lm --lines 100 --prose 100 --repair 60 --bodies 30 --out runs/lm-eval.json
    python -m sfumato.model.training.evaluate_lm --adapter runs/adapt/last ...     # a checkpoint instead of the shipped adapter
    python -m sfumato.model.training.evaluate_lm --systems engine,base-greedy
    python -m sfumato.model.training.paired A.json B.json   # two --out reports of the same tasks, item by item

Tasks (``sfumato.model.training.edit_tasks`` shapes, documents from ``sfumato.model.training.lm_corpus``'s held-out units):
``line``: one line of code with ~3,000 characters before and ~1,500 after, infilled as Ctrl+K at the
cursor does (one line); ``other``: the same in JavaScript, shell scripts and C of held-out packages
(``other_languages``), figures by language too; ``typed``: the rest of such a line after its first typed words, as a suggestion
while typing asks (its calibration says how often a bar would show one, and how often rightly); ``prose``: 1-4 words cut from a line of English documentation, infilled at the cursor the same way; ``end``: the
last 1-8 words of a paragraph of documentation held as one line (Markdown's way), the cursor past column 60; ``repair``: a
line with one corruption (a swapped, dropped or doubled letter, or a wrong name from the same file),
rewritten at strength 0.3, fixed when the result is the line exactly; ``body``: a function body from
its signature and docstring, the cursor on its first line as Ctrl+K there asks (the rest of the block,
within the editor's 64-token cap; parse rate of the function with the result, similarity); ``block``:
3-6 whole lines of code that parse on their own, rewritten at the editor's default strength (0.6):
the result's parse rate and its similarity to the lines it replaced; ``next``: a top-level unit of
held-out code taken out, the cursor on the empty line where it stood (between units, or at the end
of the file written so far), as Ctrl+K there asks: the written text's first line against the unit's
(exact, similarity), whether the text (dedented) is valid Python so far (``codeop``: complete or unfinished,
not an error), how often nothing is written, figures by placement too.
Systems: ``engine`` (what the editor runs), ``engine-context`` (the same, sent the chunks of the
task's package's other files that the editor's folder context would pick), ``engine-line`` (the same,
asked for one line where the editor asks for more: Ctrl+K at a blank line before session 43),
``engine-block`` (the same, asked for the rest of the block at every cursor: a ``next`` task's
alternative, judged in session 58), ``one-per-pass`` (the same model accepting one token a
pass: the speed baseline), ``base-greedy`` (the base alone, left to right from the prefix only; for
prose and sentence ends it is given the reference's word count).
"""

from __future__ import annotations

import argparse
import ast
import codeop
import json
import random
import statistics
import textwrap
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePath

import torch

from sfumato.model.api import InfillRequest
from sfumato.model.gap_scope import at_block_end
from sfumato.model.training.corpus import Document, missing_documentation
from sfumato.model.training.edit_tasks import REPAIR_STRENGTH, EditTask, corrupt, exact, line_tasks, next_placement, next_tasks, prose_tasks, sentence_end_tasks, similarity, typed_tasks, value_tasks, wrapped_end_tasks
from sfumato.model.project_context import Chunk, file_chunks, nearest_chunks
from sfumato.model.training.lm_corpus import files_by_unit, read_text
from sfumato.model.training.other_languages import documents_by_language



def held_out_documents() -> list[Document]:
    documents = []
    for unit, paths in sorted(files_by_unit("heldout").items()):
        source = unit.split("/")[0]
        for path in paths[:200]:
            text = read_text(path)
            if text and text.strip():
                documents.append(Document(source, f"{unit}:{path.name}", text))
    return documents


def project_context(documents) -> Callable[[EditTask], tuple[str, ...]]:
    """What the editor's folder context would send with a task: the chunks of the other files of
    its package that share the most names with the text around the cursor."""
    by_unit: dict[str, list[tuple[str, Chunk]]] = {}
    for doc in documents:
        by_unit.setdefault(doc.name.split(":")[0], []).extend((doc.name, c) for c in file_chunks(doc.name.split(":")[1], doc.text))
    return lambda task: nearest_chunks(task.prefix, task.suffix, [c for name, c in by_unit.get(task.document.split(":")[0], [])
                                                                  if name != task.document])


def repair_tasks(documents, n: int, seed: int) -> list[tuple[EditTask, str]]:
    rng = random.Random(f"{seed}:repair")
    out = []
    for task in line_tasks(documents, 3 * n, seed + 1):
        broken = corrupt(task.middle, task.prefix + task.suffix, rng)
        if broken and broken != task.middle and len(task.middle) >= 8:
            out.append((task, broken))
        if len(out) == n:
            break
    return out


def body_tasks(documents, n: int, seed: int) -> list[EditTask]:
    """Functions of 2-12 body lines with a docstring: the body after the docstring is the middle, the
    cursor after its first line's indentation (where the editor's Enter puts it)."""
    rng = random.Random(f"{seed}:body")
    found = []
    for doc in documents:
        if doc.source not in ("stdlib", "site-packages"):
            continue
        try:
            tree = ast.parse(doc.text)
        except (SyntaxError, ValueError):
            continue
        lines = doc.text.split("\n")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and ast.get_docstring(node) and len(node.body) >= 2:
                first, last = node.body[1].lineno - 1, node.end_lineno
                if 2 <= last - first <= 12:
                    start = sum(len(line) + 1 for line in lines[:first]) + len(lines[first]) - len(lines[first].lstrip())
                    end = sum(len(line) + 1 for line in lines[:last]) - 1
                    found.append(EditTask("body", doc.name, doc.text[max(0, start - 3000) : start],
                                          doc.text[start:end], doc.text[end : end + 1500]))
    rng.shuffle(found)
    return found[:n]


BODY_TOKENS = 64  # the editor's cap for infill at the cursor (sfumato.app.infill.InfillOptions)
BLOCK_STRENGTH = 0.6  # the editor's default rewrite strength (sfumato.app.settings)
ONE_LINE_KINDS = ("line", "other", "typed", "value", "prose", "end", "wrapped", "last")  # the rest of one line, as Ctrl+K at a cursor
PROSE_KINDS = ("prose", "end", "wrapped", "last")  # words of documentation


def block_tasks(documents, n: int, seed: int) -> list[EditTask]:
    """3-6 consecutive lines of held-out code that parse on their own (dedented), from the first
    line's text to the last one's end."""
    rng = random.Random(f"{seed}:block")
    code = [doc for doc in documents if doc.source in ("stdlib", "site-packages") and doc.text.count("\n") >= 20]
    tasks = []
    for _ in range(200 * n):
        if len(tasks) == n:
            break
        doc = rng.choice(code)
        lines = doc.text.split("\n")
        i, k = rng.randrange(len(lines) - 6), rng.randint(3, 6)
        block = lines[i : i + k]
        if sum(1 for line in block if line.strip()) < 3 or not block[0].strip() or max(map(len, block)) > 120:
            continue
        if not _parses_alone("\n".join(block)):
            continue
        indent = len(block[0]) - len(block[0].lstrip())
        start = sum(len(line) + 1 for line in lines[:i]) + indent
        end = start + len("\n".join(block)) - indent
        tasks.append(EditTask("block", doc.name, doc.text[max(0, start - 3000) : start], doc.text[start:end],
                              doc.text[end : end + 1500]))
    return tasks


def _parses_alone(text: str) -> bool:
    try:
        ast.parse(textwrap.dedent(text))
        return True
    except (SyntaxError, ValueError):
        return False


def rewrite_parses(reference: str, text: str) -> bool:
    """Whether a block's rewrite parses as code: an empty rewrite, or one of comments only, does
    not count for a block that held code (they parse, and were 6 of the shipped adapter's 9
    "parsing" rewrites in session 12)."""
    return _parses_alone(text) and (_has_code(text) or not _has_code(reference))


def _has_code(text: str) -> bool:
    return any(line.strip() and not line.strip().startswith("#") for line in text.split("\n"))


def parses(task: EditTask, body: str) -> bool:
    """Whether the function (its signature and docstring from the prefix) parses with ``body``."""
    lines = task.prefix.split("\n")
    for k in range(len(lines) - 1, -1, -1):
        if lines[k].lstrip().startswith(("def ", "async def ")):
            try:
                ast.parse(textwrap.dedent("\n".join(lines[k:]) + body))
                return True
            except SyntaxError:
                return False
    return False


def request_for(task: EditTask, kind: str, broken: str | None = None, **options) -> InfillRequest:
    """The request the editor sends for ``task``, its document's file name included."""
    options.setdefault("file_name", PurePath(task.document.split(":", 1)[-1]).name)
    if kind == "repair":
        return InfillRequest(prefix=task.prefix, suffix=task.suffix, max_new_tokens=48, init_text=broken,
                             strength=REPAIR_STRENGTH, **options)
    if kind in ("body", "next"):
        return InfillRequest(prefix=task.prefix, suffix=task.suffix, max_new_tokens=BODY_TOKENS,
                             one_line=not at_block_end(task.prefix, task.suffix), **options)
    if kind == "block":
        return InfillRequest(prefix=task.prefix, suffix=task.suffix, max_new_tokens=160, init_text=task.middle,
                             strength=BLOCK_STRENGTH, **options)
    return InfillRequest(prefix=task.prefix, suffix=task.suffix, max_new_tokens=32, one_line=kind in ONE_LINE_KINDS, **options)


def run_engine(backend, requests) -> list[dict]:
    results = []
    for request in requests:
        t0 = time.perf_counter()
        first = None
        for drafts in backend.stream([request]):
            first = first or time.perf_counter() - t0
        draft = drafts[0]
        results.append({"text": draft.text, "passes": draft.forward_passes, "tokens": draft.generated_tokens,
                        "confident": draft.confident, "mean_probability": draft.candidates[0].mean_probability,
                        "first_s": first, "seconds": time.perf_counter() - t0})
    return results


def base_greedy(model, tokenizer, task: EditTask, kind: str) -> str:
    """The base model alone, left to right from the prefix (no suffix), greedy. The prefix loses
    its trailing indentation (which would start the model off its tokenizer's grid); the line is
    the first one the model writes that is not blank."""
    prefix = task.prefix.rstrip(" \t") if kind not in PROSE_KINDS else task.prefix.rstrip(" ")
    ids = tokenizer(prefix[-2000:], add_special_tokens=False, return_tensors="pt").input_ids[:, -512:]
    if not ids.shape[1]:  # nothing before the gap (the first line of a file): start from a line break
        ids = tokenizer("\n", add_special_tokens=False, return_tensors="pt").input_ids
    limit = 128 if kind in ("body", "next") else 32
    out = model.generate(ids, max_new_tokens=limit, do_sample=False, pad_token_id=0)
    text = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    if kind in ("line", "other", "typed", "value", "repair"):
        return first_line(text)
    if kind in PROSE_KINDS:
        return " ".join(text.split()[: len(task.middle.split())])
    return text


def first_line(text: str) -> str:
    """``text``'s first line that is not blank, stripped ("" when there is none)."""
    return next((line.strip() for line in text.split("\n") if line.strip()), "")


def valid_so_far(text: str) -> bool:
    """Whether ``text``, dedented, is Python that parses or only lacks its end (a
    definition cut by the token cap); nothing written counts, as it breaks nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            codeop.compile_command(textwrap.dedent(text.strip("\n")), symbol="exec")
            return True
        except (SyntaxError, ValueError, OverflowError):
            return False


def calibration(results, tasks) -> dict:
    """For each bar on the mean token probability: the share of results above it, their exact match
    and their similarity."""
    table = {}
    for bar in (0.5, 0.6, 0.7, 0.8, 0.9):
        above = [(r["text"], t.middle) for r, t in zip(results, tasks) if r["mean_probability"] >= bar]
        table[str(bar)] = {"share": round(len(above) / len(tasks), 3),
                           "exact": round(statistics.mean(exact(x, m) for x, m in above), 3) if above else None,
                           "similarity": round(statistics.mean(similarity(x.strip(), m.strip()) for x, m in above), 3) if above else None}
    return table


def score(kind: str, tasks, texts) -> dict:
    """The kind's figures, and under ``items`` each task's result and scores (what ``paired`` compares)."""
    items = [{"reference": t.middle, "result": x, "exact": exact(x, t.middle), "similarity": similarity(x.strip(), t.middle.strip())}
             for t, x in zip(tasks, texts)]
    if kind == "body":
        for item, t, x in zip(items, tasks, texts):
            item["parses"] = parses(t, x)
    if kind == "block":  # the lines' own indentation first, as they sit in the file
        for item, t, x in zip(items, tasks, texts):
            indent = t.prefix.rsplit("\n", 1)[-1]
            item["parses"] = rewrite_parses(indent + t.middle, indent + x)
    names = ("exact", "similarity")
    if kind == "next":
        for item, t, x in zip(items, tasks, texts):
            item |= {"placement": next_placement(t), "empty": not x.strip(), "valid": valid_so_far(x),
                     "first_line_exact": exact(first_line(x), first_line(t.middle)),
                     "first_line_similarity": similarity(first_line(x), first_line(t.middle))}
        names += ("first_line_exact", "first_line_similarity", "valid", "empty")
    report = {"n": len(tasks)} | {name: round(statistics.mean(item[name] for item in items), 4) for name in names}
    if kind in ("body", "block"):
        report["parse_rate"] = round(statistics.mean(item["parses"] for item in items), 4)
    group_of = {"other": lambda item, t: t.document.split(":")[0], "next": lambda item, t: item["placement"]}.get(kind)
    if group_of:
        groups: dict[str, list[dict]] = {}
        for item, t in zip(items, tasks):
            groups.setdefault(group_of(item, t), []).append(item)
        report["by_language" if kind == "other" else "by_placement"] = {
            name: {"n": len(group)} | {figure: round(statistics.mean(item[figure] for item in group), 4) for figure in names}
            for name, group in groups.items()}
    return report | {"items": items}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="held-out figures of the adapted LM")
    p.add_argument("--adapter", type=Path, default=None, help="adapter folder (default: the shipped one)")
    p.add_argument("--lines", type=int, default=100)
    p.add_argument("--other-lines", type=int, default=0, help="lines of each other language (JavaScript, shell, C) of held-out packages found here")
    p.add_argument("--typed", type=int, default=0, help="lines whose first words are typed: the rest as a suggestion")
    p.add_argument("--values", type=int, default=0, help="lines cut after their first '= ' or ': ': the value as the middle")
    p.add_argument("--prose", type=int, default=100)
    p.add_argument("--ends", type=int, default=0, help="sentence ends in held-out prose held one paragraph a line")
    p.add_argument("--wrapped-ends", type=int, default=0, help="sentence ends on the last line of a wrapped paragraph")
    p.add_argument("--last-ends", type=int, default=0, help="the same where that paragraph is the last written so far")
    p.add_argument("--repair", type=int, default=60)
    p.add_argument("--bodies", type=int, default=30)
    p.add_argument("--blocks", type=int, default=0)
    p.add_argument("--next", type=int, default=0, help="top-level units taken out: what comes next, between units or at the file's end")
    p.add_argument("--systems", default="engine,one-per-pass,base-greedy")
    p.add_argument("--int8", action="store_true", help="the engine with its linear layers in int8 (--quantize int8; the editor runs float16 weights, or bfloat16 where that pays)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if missing := missing_documentation():  # the tasks are drawn from every held-out unit, documentation too
        raise SystemExit(f"the held-out documentation is not installed: {missing} (without it the tasks are not this report's)")
    torch.set_num_threads(args.threads)
    from sfumato.model.lm_base import load_adapted, load_base, trained_prefix
    from sfumato.model.lm_engine import LmDenoiserBackend
    from sfumato.model.loading import as_run_on_cpu, load_embedded

    documents = held_out_documents()
    kinds = {"line": [(t, None) for t in line_tasks(documents, args.lines, args.seed)],
             "other": [(t, None) for docs in (documents_by_language().values() if args.other_lines else ())
                       for t in line_tasks(docs, args.other_lines, args.seed, code_only=False)],
             "typed": [(t, None) for t in typed_tasks(documents, args.typed, args.seed)],
             "value": [(t, None) for t in value_tasks(documents, args.values, args.seed)],
             "prose": [(t, None) for t in prose_tasks(documents, args.prose, args.seed)],
             "end": [(t, None) for t in sentence_end_tasks(documents, args.ends, args.seed)],
             "wrapped": [(t, None) for t in wrapped_end_tasks(documents, args.wrapped_ends, args.seed)],
             "last": [(t, None) for t in wrapped_end_tasks(documents, args.last_ends, args.seed, last=True)],
             "repair": repair_tasks(documents, args.repair, args.seed),
             "body": [(t, None) for t in body_tasks(documents, args.bodies, args.seed)],
             "block": [(t, None) for t in block_tasks(documents, args.blocks, args.seed)],
             "next": [(t, None) for t in next_tasks(documents, args.next, args.seed)]}
    systems = args.systems.split(",")
    report: dict = {"adapter": str(args.adapter or "shipped"), "held_out_units": len(files_by_unit("heldout"))}
    engine, base, nearest = None, None, None
    if {"engine", "engine-context", "engine-line", "engine-block", "one-per-pass"} & set(systems):
        if args.adapter:
            model, tokenizer = load_adapted(args.adapter)
            engine = LmDenoiserBackend(as_run_on_cpu(model, args.int8), tokenizer, _info(args.int8),
                                       prefix_tokens=trained_prefix(args.adapter))
        else:
            engine = load_embedded(quantize="int8" if args.int8 else None)
    for kind, items in kinds.items():
        if not items:
            continue
        tasks = [t for t, _ in items]
        report[kind] = {}
        for system in systems:
            if system in ("engine", "engine-context", "engine-line", "engine-block") or (system == "one-per-pass" and kind in ONE_LINE_KINDS):
                options = {"sampler_bound": 1e-4} if system == "one-per-pass" else {}
                if system == "engine-context" and nearest is None:
                    nearest = project_context(documents)  # the chunk index, built once
                context = nearest if system == "engine-context" else lambda task: ()
                requests = [request_for(t, kind, b, seed=args.seed, context=context(t), **options) for t, b in items]
                if system in ("engine-line", "engine-block"):
                    requests = [replace(request, one_line=system == "engine-line" and not request.is_rewrite) for request in requests]
                results = run_engine(engine, requests)
                texts = [r["text"] for r in results]
                entry = score(kind, tasks, texts)
                entry["tokens_per_pass"] = round(sum(r["tokens"] for r in results) / max(1, sum(r["passes"] for r in results)), 3)
                entry["median_seconds"] = round(statistics.median(r["seconds"] for r in results), 3)
                entry["median_first_draft_s"] = round(statistics.median(r["first_s"] for r in results), 3)
                confident = [(r, t) for r, t in zip(results, tasks) if r["confident"]]
                entry["confident_share"] = round(len(confident) / len(tasks), 3)
                entry["exact_when_confident"] = round(statistics.mean(exact(r["text"], t.middle) for r, t in confident), 4) if confident else None
                entry["exact_by_mean_probability"] = calibration(results, tasks)
                entry["examples"] = [{"reference": t.middle, "result": x} for t, x in zip(tasks[:3], texts)]
                if kind == "repair":
                    entry["unchanged"] = round(statistics.mean(r["text"] == b for r, (_, b) in zip(results, items)), 4)
                report[kind][system] = entry
            elif system == "base-greedy" and kind != "block":  # a rewrite: the base has no way to read one
                base = base or load_base()  # (model, tokenizer), read once for every kind
                with torch.inference_mode():
                    texts = [base_greedy(*base, t, kind) for t in tasks]
                report[kind][system] = score(kind, tasks, texts)
            shown = {k: v for k, v in report[kind].get(system, {}).items() if k != "items"}  # items: in --out only
            print(json.dumps({kind: {system: shown or None}}), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))


def _info(int8: bool):
    from sfumato.model.api import ModelInfo

    return ModelInfo("sfumato-lm (checkpoint)", "lm-denoiser", "cpu", 0, False, "Apache-2.0",
                     "int8 (float32)" if int8 else "float32")


if __name__ == "__main__":
    main()
