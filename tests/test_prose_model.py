"""The optional prose model: proposals for a gap inside a sentence, scored with the text after it."""

from __future__ import annotations

import torch

from sfumato.model import prose_model
from sfumato.model.api import InfillRequest
from sfumato.model.prose_model import MAX_WORDS, ProseModel, ProseModelLoader, prose_model_path
from sfumato.model.rerank import FEATURES, Ranker
from sfumato.model.suggest import SuggestingBackend

SENTENCE = ("Some notes on the helpers.\n\nWhen it is called with a path, the function returns a new ",
            " of the items it found.\n")


class Ready:
    """A loader whose model is there."""

    def __init__(self, model):
        self.model = model

    def get(self):
        return self.model


def test_proposals_are_a_few_words_on_one_line_best_first(tiny_llama_dir):
    model = ProseModel.load(tiny_llama_dir, dtype=torch.float32)
    found = model.propose(*SENTENCE, extra=["list"])
    texts, shares = [text for text, _ in found], [share for _, share in found]
    assert "list" in texts and len(texts) > 1  # the model's own continuations compete with the phrase
    assert shares == sorted(shares, reverse=True) and abs(sum(shares) - 1.0) < 1e-6
    assert all(text and "\n" not in text and len(text.split()) <= MAX_WORDS for text in texts)


def test_a_proposal_is_scored_by_the_probability_of_it_and_the_text_after_the_gap(tiny_llama_dir):
    model = ProseModel.load(tiny_llama_dir, dtype=torch.float32)
    context = model.encode("the function returns a")
    texts, after = [" list", " new set of"], " of the items"
    out = model.model(torch.tensor([context]), use_cache=True)
    batched = model._scores(out.cache, out.logits[0, -1].log_softmax(-1), len(context), texts, after)
    for text, score in zip(texts, batched):  # one sequence at a time, no cache
        row = model.encode(text + after)
        ids = torch.tensor([context + row])
        log_probs = model.model(ids).logits[0].log_softmax(-1)
        direct = sum(log_probs[len(context) - 1 + i, token].item() for i, token in enumerate(row))
        assert abs(score - direct) < 1e-3


def test_the_engine_ranks_the_prose_models_words_for_a_sentence_and_not_for_code(tiny_backend, tiny_llama_dir):
    model = ProseModel.load(tiny_llama_dir, dtype=torch.float32)
    ranker = Ranker({name: 0.0 for name in FEATURES} | {"prose": 5.0}, bias=0.0, confidence_bar=0.5)
    engine = SuggestingBackend(tiny_backend, None, ranker, prose_model=Ready(model))
    drafts = None
    for drafts in engine.stream([InfillRequest(prefix=SENTENCE[0], suffix=SENTENCE[1], max_new_tokens=8, seed=0)]):
        pass
    best = drafts[0].candidates[0]
    assert (best.origin, best.source) == ("prose", "prose_model") and drafts[0].confident
    assert best.text == model.propose(*SENTENCE)[0][0]
    for drafts in engine.stream([InfillRequest(prefix="def f(x):\n    y = ", suffix="\n    return y\n", max_new_tokens=8, seed=0)]):
        pass
    assert all(c.origin != "prose" for c in drafts[0].candidates)


def test_a_prose_model_that_does_not_load_leaves_the_engine_without_it_and_says_why_once(tmp_path):
    early, late = [], []
    loader = ProseModelLoader(tmp_path / "missing")
    loader.watch(early.append)  # before or after the failure: the thread races this
    assert loader.wait(timeout=60) is None and loader.get() is None
    loader.watch(late.append)
    assert early == late == [loader.error]
    assert str(tmp_path / "missing") in loader.error and "did not load" in loader.error
    assert "\n" not in loader.error and loader.error.endswith("prose gaps go without it")


def test_an_engine_reports_its_prose_models_failure_to_a_watcher(tiny_backend, tmp_path):
    engine = SuggestingBackend(tiny_backend, None, Ranker({name: 0.0 for name in FEATURES}, 0.0, 0.5),
                               prose_model=ProseModelLoader(tmp_path / "missing"))
    engine.wait_for_prose_model()
    said = []
    engine.watch_optional(said.append)
    assert said == [engine.prose_model.error]


def test_which_prose_model_loads(monkeypatch, tmp_path):
    monkeypatch.setenv("SFUMATO_PROSE_MODEL", "off")
    assert prose_model_path() is None
    monkeypatch.setenv("SFUMATO_PROSE_MODEL", str(tmp_path / "model.gguf"))
    assert prose_model_path() == tmp_path / "model.gguf"
    monkeypatch.delenv("SFUMATO_PROSE_MODEL")
    monkeypatch.setattr(prose_model.importlib.util, "find_spec", lambda name: None)
    assert prose_model_path() is None  # the package is not installed: no prose model
