"""Teacher-forced figures of model folders: how training runs are compared at equal compute.

    python tools/compare_models.py resources/models/sfumato-small checkpoints/ab-muon/hf --tasks 200

For each folder: the share of reference tokens that are the model's top choice and the nats per
token, left to right with the earlier tokens given (``sfumato.model.training.evaluate.teacher_forced``), on the same
single-line tasks of a held-out part (dev unless ``--part test``), once over every source and once over documentation
only (prose). Each folder is prompted as its sfumato.json says (order, context budget).
"""

from __future__ import annotations

import argparse
import json

import torch

from sfumato.model.training.evaluate import heldout_documents, make_tasks, teacher_forced
from sfumato.model.loading import load_backend

CODE_SOURCES = ("stdlib", "site-packages")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="model folders")
    p.add_argument("--part", choices=["dev", "test"], default="dev")
    p.add_argument("--tasks", type=int, default=200, help="single-line tasks per set")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    documents = heldout_documents(args.part)
    prose = [doc for doc in documents if doc.source not in CODE_SOURCES]
    task_sets = {"all": make_tasks(documents, "single", args.tasks, 0), "prose": make_tasks(prose, "single", args.tasks, 0)}
    for folder in args.models:
        backend = load_backend(folder, device="cpu")
        figures = {name: teacher_forced(backend, tasks) for name, tasks in task_sets.items()}
        print(json.dumps({"model": folder, "part": args.part, **figures}), flush=True)


if __name__ == "__main__":
    main()
