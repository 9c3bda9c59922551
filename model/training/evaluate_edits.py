"""The issue-14 figures: held-out edits as the editor sends them, each beside its baselines.

    python -m sfumato.model.training.evaluate_edits embedded --part test --lines 300 --prose 100 --repair 100 --out runs/edits-test.json

For every task kind (``sfumato.model.training.edit_tasks``: line, prose, repair) it reports exact match and
character similarity of: the suggestion engine (retrieval, denoising, reranking: what the editor
gets), the model alone (the bare backend, no retrieval or ranking), and the baselines ``repeat``
and ``lookup``. The engine's ``confident`` share and the exact match among confident results show
what the editor writes and what it holds back. Timing: time to the first draft and to the whole
result of single requests, on ``--threads`` cores (line tasks; ``timing_prose``: prose gaps, where
the optional prose model works: ``SFUMATO_PROSE_MODEL`` chooses it, ``off`` measures without).

``--context siblings`` gives every task the project context the editor would send with the
document's directory open as its folder (``sfumato.model.training.sibling_context``); ``--snippets``
sets how many snippets it sends.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch

from sfumato.model.loading import load_backend
from sfumato.model.project_context import MAX_SNIPPETS
from sfumato.model.training.edit_tasks import exact, line_tasks, lookup_baseline, prose_tasks, repeat_baseline, similarity
from sfumato.model.training.sibling_context import with_sibling_context

BATCH = 8


def final_drafts(backend, requests) -> list:
    drafts = ()
    for drafts in backend.stream(requests):
        pass
    return list(drafts)


def predictions(backend, tasks, seed: int) -> list:
    """The final draft of each task, in batches as the evaluation always ran."""
    out = []
    for i in range(0, len(tasks), BATCH):
        out += final_drafts(backend, [task.request(seed=seed + i + k) for k, task in enumerate(tasks[i : i + BATCH])])
    return out


def figures(texts: list[str], tasks) -> dict:
    return {"exact": round(sum(exact(t, task.middle) for t, task in zip(texts, tasks)) / len(tasks), 4),
            "similarity": round(statistics.mean(similarity(t, task.middle) for t, task in zip(texts, tasks)), 4)}


def evaluate_kind(engine, bare, table, tasks, seed: int) -> dict:
    drafts = predictions(engine, tasks, seed)
    report = {"n": len(tasks), "engine": figures([d.text for d in drafts], tasks)}
    confident = [(d, t) for d, t in zip(drafts, tasks) if d.confident]
    report["engine"]["confident_share"] = round(len(confident) / len(tasks), 4)
    report["engine"]["exact_when_confident"] = (
        round(sum(exact(d.text, t.middle) for d, t in confident) / len(confident), 4) if confident else None)
    if bare is not engine:
        report["model_alone"] = figures([d.text for d in predictions(bare, tasks, seed)], tasks)
    if tasks[0].kind != "repair":
        report["repeat"] = figures([repeat_baseline(t) for t in tasks], tasks)
        report["lookup"] = figures([lookup_baseline(t, table) for t in tasks], tasks)
    report["examples"] = [{"reference": t.middle, "engine": d.text, "confident": d.confident,
                           "origin": d.candidates[0].origin} for d, t in list(zip(drafts, tasks))[:40]]
    return report


def timing(engine, tasks, seed: int) -> dict:
    """Median milliseconds to the first draft and to the whole result, one request at a time, as
    wall time and as this process's CPU time (the wall time of a machine shared with other work
    runs long; the CPU time, summed over threads, does not)."""
    first, whole, cpu = [], [], []
    for index, task in enumerate(tasks):
        start, start_cpu = time.perf_counter(), time.process_time()
        stream = engine.stream([task.request(seed=seed + index)])
        next(stream)
        first.append(time.perf_counter() - start)
        for _ in stream:
            pass
        whole.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"n": len(tasks), "first_draft_ms": round(1000 * statistics.median(first), 1),
            "whole_result_ms": round(1000 * statistics.median(whole), 1),
            "whole_result_p90_ms": round(1000 * sorted(whole)[int(0.9 * (len(whole) - 1))], 1),
            "whole_result_cpu_ms": round(1000 * statistics.median(cpu), 1),
            "load_average": round(os.getloadavg()[0], 2)}


def main(argv=None) -> None:
    from sfumato.model.training.evaluate import heldout_documents

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="model folder or spec (e.g. embedded)")
    p.add_argument("--part", choices=["dev", "test"], default="test")
    p.add_argument("--lines", type=int, default=200)
    p.add_argument("--prose", type=int, default=100)
    p.add_argument("--repair", type=int, default=100)
    p.add_argument("--timing", type=int, default=30, help="line tasks timed one by one")
    p.add_argument("--context", choices=["none", "siblings"], default="none",
                   help="siblings: the other files of the document's directory as the open folder")
    p.add_argument("--snippets", type=int, default=MAX_SNIPPETS, help="context snippets per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    engine = load_backend(args.model, device="cpu")
    if hasattr(engine, "wait_for_prose_model"):
        engine.wait_for_prose_model()
    bare = getattr(engine, "backend", engine)
    table = getattr(engine, "table", None)
    documents = heldout_documents(args.part)
    report = {"model": args.model, "part": args.part, "context": args.context, "snippets": args.snippets}
    kinds = {"line": line_tasks(documents, args.lines, args.seed),
             "prose": prose_tasks(documents, args.prose, args.seed),
             "repair": line_tasks(documents, args.repair, args.seed + 1, "repair")}
    timed = line_tasks(documents, args.timing, args.seed)
    if args.context == "siblings":
        kinds = {kind: with_sibling_context(tasks, args.snippets) for kind, tasks in kinds.items()}
        timed = with_sibling_context(timed, args.snippets)
    for kind, tasks in kinds.items():
        if tasks:
            report[kind] = evaluate_kind(engine, bare, table, tasks, args.seed)
            print(kind, json.dumps({k: v for k, v in report[kind].items() if k != "examples"}), flush=True)
    report["timing"] = timing(engine, timed, args.seed)
    print("timing", json.dumps(report["timing"]), flush=True)
    if kinds["prose"] and args.timing:  # gaps inside a sentence: where a prose model works
        report["timing_prose"] = timing(engine, kinds["prose"][: args.timing], args.seed)
        print("timing_prose", json.dumps(report["timing_prose"]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
