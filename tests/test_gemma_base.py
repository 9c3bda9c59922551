"""The second base (Gemma 3 270M): its layout, its examples, its sliding-window cache, the engine on it.

A tiny SentencePiece-style tokenizer with Gemma's special tokens and a tiny random Gemma 3 model
stand in for the real ones (a 33 MB tokenizer and a 250 MB package), so these run everywhere.
"""

from __future__ import annotations

import json
import random

import pytest

torch = pytest.importorskip("torch")

from sfumato.model.api import InfillRequest, ModelInfo
from sfumato.model.lm_base import GEMMA3, SMOLLM2, base_of, without_window
from sfumato.model.lm_layout import SpecialIds, prompt_ids

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<unused0>", "<unused1>"]
WORDS = ["def", "▁f", "(", ")", ":", "\n", "▁▁▁▁", "return", "▁x", "x", "▁+", "▁1", "▁=", "▁y", "y", "▁", "1", "+", "=",
         "▁return", "▁def", "print", "▁print", "\n\n", ",", "▁a", "a", "▁b", "b", ".", "▁▁", "▁▁▁", "i", "f", "if"]
MERGES = [("▁", "▁"), ("▁▁", "▁▁"), ("▁▁", "▁"), ("i", "f"), ("▁", "x")]  # indentation whole, as Gemma's


@pytest.fixture(scope="module")
def gemma_tokenizer():
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS + WORDS)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=MERGES, unk_token="<unk>", fuse_unk=True))
    core.normalizer = normalizers.Replace(" ", "▁")
    core.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    # as Gemma's: every marker an added special token, most of them (the <unusedN>) not named ones
    core.add_special_tokens([AddedToken(token, special=True) for token in SPECIALS + ["<start_of_turn>"]])
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", unk_token="<unk>",
                                   pad_token="<pad>", mask_token="<mask>")


@pytest.fixture(scope="module")
def tiny_gemma(gemma_tokenizer):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=len(gemma_tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=4,
                              layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                              max_position_embeddings=2048, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    return Gemma3ForCausalLM(config).eval()


def test_gemmas_layout_uses_its_own_markers_and_begins_with_bos(gemma_tokenizer):
    special = SpecialIds.of(gemma_tokenizer)
    ids = gemma_tokenizer.convert_tokens_to_ids
    assert (special.suffix_mark, special.prefix_mark, special.mask, special.end, special.start) == (
        ids("<unused0>"), ids("<unused1>"), ids("<mask>"), ids("<eos>"), ids("<bos>"))
    assert prompt_ids(special, [10, 11], [12]) == [special.start, special.suffix_mark, 12, special.prefix_mark, 10, 11]


def test_smollm2s_layout_has_no_start_token(smol_tokenizer):
    special = SpecialIds.of(smol_tokenizer)
    assert special.start is None
    assert prompt_ids(special, [10], [12]) == [special.suffix_mark, 12, special.prefix_mark, 10]


def test_every_special_token_spells_nothing(gemma_tokenizer):
    from sfumato.model.token_text import token_bytes_table

    table = token_bytes_table(gemma_tokenizer)
    ids = gemma_tokenizer.convert_tokens_to_ids
    assert table[ids("<start_of_turn>")] == table[ids("<unused0>")] == b""
    assert table[ids("▁return")] == b" return" and table[ids("\n")] == b"\n"


def test_a_cursor_after_indentation_heals_to_gemmas_whole_indentation_token(gemma_tokenizer, smol_tokenizer):
    from sfumato.model.lm_vocabulary import CanvasVocabulary

    ids = gemma_tokenizer.convert_tokens_to_ids
    assert gemma_tokenizer("\n    if x:", add_special_tokens=False).input_ids[:3] == [ids("\n"), ids("▁▁▁▁"), ids("if")]
    gemma = CanvasVocabulary(gemma_tokenizer, SpecialIds.of(gemma_tokenizer))
    assert not gemma.space_joins_word and not gemma.heal_spaces(b"    ").any()  # the 4-space token is not blocked
    allowed = gemma.heal_allowed(b"    ")
    assert allowed[ids("▁▁▁▁")] and not allowed[ids("▁▁▁")]  # three spaces would leave " if": off Gemma's grid
    smol = CanvasVocabulary(smol_tokenizer, SpecialIds.of(smol_tokenizer))
    assert smol.space_joins_word and smol.heal_spaces(b"    ").any()


def test_an_adapter_names_its_base_and_older_ones_are_smollm2s(tmp_path):
    shipped, checkpoint, older = tmp_path / "shipped", tmp_path / "checkpoint", tmp_path / "older"
    for folder in (shipped, checkpoint, older):
        folder.mkdir()
    (shipped / "training.json").write_text(json.dumps({"step": 1, "base": GEMMA3.name}))
    (checkpoint / "state.json").write_text(json.dumps({"step": 1, "base": GEMMA3.name}))
    (older / "training.json").write_text(json.dumps({"step": 1}))
    assert (base_of(shipped), base_of(checkpoint), base_of(older)) == (GEMMA3, GEMMA3, SMOLLM2)
    (older / "training.json").write_text(json.dumps({"step": 1, "base": "llama-9000"}))
    with pytest.raises(ValueError, match="names a base this version does not know: 'llama-9000'"):
        base_of(older)


def test_gemma_examples_find_lines_and_words_and_the_teacher_reads_from_bos(gemma_tokenizer):
    from sfumato.model.training.batches import teacher_reading
    from sfumato.model.training.examples import Vocabulary, make_example

    vocab = Vocabulary.of(gemma_tokenizer)
    assert gemma_tokenizer.convert_tokens_to_ids("\n") in vocab.newlines
    assert gemma_tokenizer.convert_tokens_to_ids("▁return") in vocab.word_starts
    assert gemma_tokenizer.convert_tokens_to_ids("return") not in vocab.word_starts
    tokens = vocab.encode("def f(x):\n    return x + 1\n\ny = f(1)\nprint(y)\n" * 3)
    rng = random.Random(0)
    examples = [e for e in (make_example(tokens, rng, vocab) for _ in range(50)) if e is not None]
    assert examples and all(e.ids[0] == vocab.special.start for e in examples)
    masked = next(e for e in examples if not e.both_ways and teacher_reading(e, vocab.special))
    ids, first, _ = teacher_reading(masked, vocab.special)
    prefix = masked.ids[masked.ids.index(vocab.special.prefix_mark) + 1 : masked.prompt_len]
    assert ids[0] == vocab.special.start and ids[1:first] == prefix


def test_a_sliding_window_cache_rolls_back_once_the_window_reads_the_whole_sequence(tiny_gemma):
    from transformers import DynamicCache

    def crop_after(model, tokens: int):
        cache = DynamicCache(config=model.config)
        with torch.no_grad():
            model(input_ids=torch.arange(3, 3 + tokens)[None], cache=cache, use_cache=True)
        cache.crop(-3)  # what the engine does to read other queries after the same prompt
        return cache.get_seq_length()

    with pytest.raises(RuntimeError):
        crop_after(tiny_gemma, 10)  # past Gemma's window the oldest keys are gone
    assert crop_after(without_window(tiny_gemma), 10) == 7


def test_the_engine_runs_on_a_gemma_base(tiny_gemma, gemma_tokenizer):
    from sfumato.model.lm_engine import LmDenoiserBackend

    backend = LmDenoiserBackend(without_window(tiny_gemma), gemma_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    request = InfillRequest(prefix="def f(x):\n    return x + 1\n\ny = f(1)\nprint(y)\n" * 2 + "def f(x):\n    return ",
                            suffix="\n\nprint(y)\n", max_new_tokens=8, one_line=True)
    passes = [drafts[0] for drafts in backend.stream([request])]
    assert passes and passes[-1].final
    text = passes[-1].candidates[0].text
    assert "\n" not in text and not any(marker in text for marker in SPECIALS)


def test_a_large_vocabularys_embedding_is_int8_rows_with_its_likeliest_tokens_scored_from_them(tiny_gemma, monkeypatch):
    import copy

    from sfumato.model import lm_head

    monkeypatch.setattr(lm_head, "SHORTLIST", 8)
    ids = torch.tensor([[2, 7, 12, 15, 9, 30, 21]])
    with torch.no_grad():
        exact = tiny_gemma(input_ids=ids).logits[0]
        small = copy.deepcopy(tiny_gemma)
        assert isinstance(lm_head.with_rows(small).lm_head, torch.nn.Linear)  # a small vocabulary: as it was
        monkeypatch.setattr(lm_head, "LARGE_VOCABULARY", 10)
        slimmed = lm_head.with_rows(copy.deepcopy(tiny_gemma))
        rough = slimmed(input_ids=ids).logits[0]
    embedding = slimmed.get_input_embeddings()
    assert embedding.rows.dtype == torch.int8 and rough.dtype == torch.float32
    assert not any(p.dtype == torch.float32 and p.shape[0] == embedding.num_embeddings and p.dim() == 2 for p in slimmed.parameters())
    assert torch.equal(rough.argmax(-1), exact.argmax(-1))
    top = rough.topk(8, dim=-1).indices
    assert torch.allclose(rough.gather(-1, top), exact.gather(-1, top), atol=2e-2)  # int8 rows, float32 sums
    assert not torch.allclose(rough, exact, atol=1e-4)  # the rest are int8 activations' too


def test_the_cpu_form_is_cached_and_read_back_a_layer_at_a_time_and_a_damaged_copy_is_refused(tiny_gemma, tmp_path, monkeypatch):
    import copy

    from safetensors.torch import load_file, save_file

    from sfumato.model import lm_cpu, lm_head
    from sfumato.model.memory import parameter_count

    monkeypatch.setattr(lm_head, "LARGE_VOCABULARY", 10)
    ids = torch.tensor([[2, 7, 12, 15, 9, 30, 21]])
    with torch.no_grad():
        exact = tiny_gemma(input_ids=ids).logits
    rows = lm_head.with_rows(copy.deepcopy(tiny_gemma))
    lm_cpu.save(rows, tmp_path)
    assert lm_cpu.saved(tmp_path)
    read = lm_cpu.read(tmp_path)
    in_memory = lm_cpu.for_cpu(rows)
    with torch.no_grad():
        logits = read(input_ids=ids).logits
        assert torch.equal(logits, in_memory(input_ids=ids).logits)  # the cache holds what the editor would make
    assert torch.equal(logits.argmax(-1), exact.argmax(-1))
    assert read.get_input_embeddings().rows.dtype == torch.int8
    assert not any(isinstance(module, torch.nn.Linear) for module in read.modules())  # every layer packed in float16
    vocabulary = read.get_input_embeddings().num_embeddings  # ... and still counted, with a scale per row more
    assert parameter_count(read) == sum(p.numel() for p in tiny_gemma.parameters()) + vocabulary
    assert {p.dtype for name, p in read.named_parameters() if "embed" not in name} == {torch.float32}  # the norms

    weights = load_file(tmp_path / lm_cpu.FILE)
    name = next(name for name in weights if "layers.1.mlp" in name)
    save_file({k: v for k, v in weights.items() if k != name}, tmp_path / lm_cpu.FILE)
    with pytest.raises(ValueError, match="lacks 1 weights"):
        lm_cpu.read(tmp_path)
    save_file({**weights, name: weights[name][:-1].contiguous()}, tmp_path / lm_cpu.FILE)
    with pytest.raises(ValueError, match=f"{name} does not fit the model"):
        lm_cpu.read(tmp_path)


def test_a_gpu_start_merges_a_large_vocabulary_in_memory_rather_than_read_the_cpu_form(tiny_gemma, gemma_tokenizer,
                                                                                        tmp_path, monkeypatch):
    import copy

    import peft

    from sfumato.model import lm_base, lm_cpu, lm_head

    monkeypatch.setattr(lm_head, "LARGE_VOCABULARY", 10)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    adapter = tmp_path / "adapter"
    lora = peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft.get_peft_model(copy.deepcopy(tiny_gemma), lora).save_pretrained(adapter)
    source = tmp_path / "base.gguf"
    source.write_bytes(b"a release of the base")
    monkeypatch.setattr(lm_base, "gguf_path", lambda base=None: source)
    monkeypatch.setattr(lm_base, "load_base", lambda base=None: (copy.deepcopy(tiny_gemma), gemma_tokenizer))
    monkeypatch.setattr(lm_base, "shipped_adapter", lambda: adapter)

    lm_base.load_adapted()  # a CPU start caches the CPU form
    folder = lm_base.merged_folder(lm_base.dequantised_folder(source), adapter)
    assert lm_cpu.saved(folder)
    on_cpu, _ = lm_base.load_adapted()
    assert isinstance(on_cpu.get_input_embeddings(), lm_head.RowsEmbedding)
    for_gpu, _ = lm_base.load_adapted(cpu=False)
    assert isinstance(for_gpu.get_input_embeddings(), torch.nn.Embedding)
    assert all(isinstance(for_gpu.get_submodule(name), torch.nn.Linear) for name in lm_cpu.body_linears(for_gpu))
    merged = peft.PeftModel.from_pretrained(copy.deepcopy(tiny_gemma), adapter).merge_and_unload()
    ids = torch.tensor([[2, 7, 12, 15, 9, 30, 21]])
    with torch.no_grad():
        assert torch.equal(for_gpu(input_ids=ids).logits, merged(input_ids=ids).logits)  # the adapter in it, full precision
    assert lm_cpu.saved(folder)  # the CPU form stays for the next CPU start
