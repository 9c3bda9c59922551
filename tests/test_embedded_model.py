"""The shipped default model loads through the engine and infills held-out code sensibly."""

from __future__ import annotations

import json

import pytest

from model.api import InfillRequest
from model.training.evaluate import heldout_documents, make_tasks, teacher_forced
from model.loading import EMBEDDED_DIR, EMBEDDED_NAME, load_backend


@pytest.fixture(scope="module")
def backend():
    return load_backend("embedded", device="cpu")


def test_the_folder_is_complete_and_small():
    folder = EMBEDDED_DIR / EMBEDDED_NAME
    for name in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json", "sfumato.json", "README.md"):
        assert (folder / name).is_file(), name
    assert sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) < 100 * 2**20  # weights and line table
    assert json.loads((folder / "sfumato.json").read_text())["prompt_layout"] == "fim"


def test_infills_held_out_lines(backend):
    tasks = make_tasks(heldout_documents("test"), "single", 6, seed=7)
    requests = [InfillRequest(prefix=t.prefix, suffix=t.suffix, max_new_tokens=32, seed=0) for t in tasks]
    final = None
    for drafts in backend.stream(requests):
        final = drafts
    assert all(draft.final for draft in final)
    texts = [draft.text for draft in final]
    assert sum(bool(text.strip()) for text in texts) >= 5, texts
    for draft in final:
        pieces = [token.text for token in draft.tokens]
        assert len(pieces) < 4 or len(set(pieces)) > 1, draft.text  # not one token over and over
        assert draft.forward_passes >= 1


def test_predicts_held_out_tokens_far_above_chance(backend):
    """Left-to-right teacher forcing on held-out lines: a third of the tokens are the model's top
    choice (an untrained model of this vocabulary gets about 1 in 8,000)."""
    figures = teacher_forced(backend, make_tasks(heldout_documents("test"), "single", 12, seed=7))
    assert figures["n"] == 12
    assert figures["token_accuracy"] > 0.2
    assert 0 < figures["nll"] < 5.0


def final_draft(engine, request):
    drafts = None
    for drafts in engine.stream([request]):
        pass
    return drafts[0]


def test_the_shipped_engine_retrieves_a_common_line_and_ranks_it_first(backend):
    """A held-out-like snippet: the line under ``if __name__ == "__main__":`` is in the corpus table."""
    from model.suggest import SuggestingBackend

    assert isinstance(backend, SuggestingBackend) and backend.table is not None
    prefix = 'import sys\n\n\ndef main():\n    print(sys.argv)\n\n\nif __name__ == "__main__":\n    '
    draft = final_draft(backend, InfillRequest(prefix=prefix, suffix="\n", max_new_tokens=16, seed=0))
    assert draft.final and draft.confident
    assert draft.text == "main()"
    assert len(draft.candidates) > 1  # the rest stay reachable as alternatives


def test_the_shipped_engine_gives_a_rewrite_back_when_nothing_beats_it(backend):
    prefix = "def area(width, height):\n    "
    draft = final_draft(backend, InfillRequest(prefix=prefix, suffix="\n", init_text="return width * height",
                                               strength=0.3, max_new_tokens=16, seed=0))
    assert draft.text == "return width * height" and draft.candidates[0].origin == "original"
    assert not draft.confident


def test_the_shipped_engine_holds_back_a_guess(backend):
    prefix = "def mean(values):\n    total = sum(values)\n    return "
    draft = final_draft(backend, InfillRequest(prefix=prefix, suffix="\n", max_new_tokens=16, seed=0))
    assert draft.text in ("total", "values") and not draft.confident
