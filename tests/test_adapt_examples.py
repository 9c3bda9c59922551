"""The adaptation's training examples: slips aligned with the text they spoil, word gaps, the prose share."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")

from sfumato.model.training import adapt, batches, examples, lm_corpus  # noqa: E402


@pytest.fixture(scope="module")
def vocab(smol_tokenizer):
    return examples.Vocabulary.of(smol_tokenizer)


def loss_of(model, examples_, vocab, distill):
    return batches.batch_loss(model, batches.collate(examples_, vocab.special, distill=bool(distill)), distill)


TEXT = ("def area(width, height):\n    \"\"\"Return the area of the rectangle.\"\"\"\n    return width * height\n\n\n"
        "Keep a copy of your files on another machine, and check the copy now and then.\n") * 2


def test_a_slip_is_aligned_with_the_correct_tokens_and_an_end_deletes_the_extra_ones(vocab, smol_tokenizer):
    tokens = vocab.encode(TEXT)
    middle = vocab.encode("    return width * height")
    rng = random.Random(3)
    seen = 0
    for _ in range(40):
        slip = examples._slip(middle, tokens, rng, vocab)
        if slip is None:
            continue
        shown, target, wrong = slip
        seen += 1
        assert len(shown) == len(target) and wrong and all(0 <= i < len(shown) for i in wrong)
        assert vocab.decode(shown) != vocab.decode(middle)  # the slip is in what the model is shown
        kept = [t for t in target if t != vocab.special.end]
        assert kept == middle  # with its ends deleted, the target is the correct text
        assert all(shown[i] == target[i] for i in range(len(shown)) if i not in wrong)
    assert seen >= 20


def test_a_word_gap_is_whole_words_inside_one_line(vocab):
    tokens = vocab.encode(TEXT)
    rng = random.Random(5)
    for _ in range(200):
        start, length = examples.pick_middle(tokens, rng, 16, vocab)
        assert length >= 1 and start + length <= len(tokens)
    gaps = 0
    for seed in range(300):
        rng = random.Random(seed)
        kind = random.Random(seed).random()  # the draw that picks the middle's kind
        start, length = examples.pick_middle(tokens, rng, 16, vocab)
        if examples.LINE_SHARE <= kind < examples.LINE_SHARE + examples.WORDS_SHARE:
            gaps += 1
            assert tokens[start] in vocab.word_starts
            assert not any(t in vocab.newlines for t in tokens[start : start + length])
    assert gaps > 30


def test_every_example_fills_a_canvas_of_a_trained_size(vocab):
    tokens = vocab.encode(TEXT)
    rng = random.Random(7)
    for _ in range(100):
        ids, prompt_len, target, weight, _ = examples.make_example(tokens, rng, vocab)
        assert len(target) == len(weight) == len(ids) - prompt_len in examples.CANVAS_SIZES
        assert any(weight)


def test_the_sampler_draws_documentation_at_its_share(monkeypatch, tmp_path, smol_tokenizer):
    for name in ("guide.txt", "code.py"):
        (tmp_path / name).write_text(f"text of {name}\n")
    units = {"python-docs": [tmp_path / "guide.txt"], **{f"site-packages/p{i}": [tmp_path / "code.py"] for i in range(50)}}
    monkeypatch.setattr(lm_corpus, "files_by_unit", lambda split: units)
    sampler = lm_corpus.DocumentSampler("train", smol_tokenizer, random.Random(1), prose_share=0.5)
    drawn = [smol_tokenizer.decode(sampler.next_window().tokens) for _ in range(400)]
    share = sum("guide" in text for text in drawn) / len(drawn)
    assert 0.4 < share < 0.6  # by units alone it would be 1 in 51


def test_the_sampler_draws_other_languages_at_their_share(monkeypatch, tmp_path, smol_tokenizer):
    for name in ("guide.txt", "code.py", "tool.sh"):
        (tmp_path / name).write_text(f"text of {name}\n")
    units = {"python-docs": [tmp_path / "guide.txt"], **{f"site-packages/p{i}": [tmp_path / "code.py"] for i in range(50)}}
    monkeypatch.setattr(lm_corpus, "files_by_unit", lambda split: units)
    monkeypatch.setattr(lm_corpus.other_languages, "files_by_unit", lambda split: {"shell/tool": [tmp_path / "tool.sh"]})
    sampler = lm_corpus.DocumentSampler("train", smol_tokenizer, random.Random(2), prose_share=0.3, other_share=0.2)
    drawn = [smol_tokenizer.decode(sampler.next_window().tokens) for _ in range(600)]
    shares = [sum(name in text for text in drawn) / len(drawn) for name in ("guide", "tool", "code")]
    assert 0.24 < shares[0] < 0.36 and 0.15 < shares[1] < 0.25 and 0.43 < shares[2] < 0.57


def test_a_header_heads_the_prefix_after_the_project_context(vocab):
    """An example of a shell script's is laid out as the engine lays out its request: the project's
    snippets, then the document's ``# name`` header, then the text before the middle."""
    tokens, header = vocab.encode(TEXT), vocab.encode("# backup.sh\n")
    rng, seen = random.Random(5), 0
    for _ in range(40):
        example = examples.make_example(tokens, rng, vocab, snippets=lambda prefix, suffix: ["# other.sh\nrsync -a src dst\n"],
                                        header=header)
        if example is None:
            continue
        prompt = vocab.decode(example.ids[: example.prompt_len])
        assert "# backup.sh\n" in prompt
        if "rsync" in prompt:
            assert prompt.index("rsync") < prompt.index("# backup.sh")
            seen += 1
    assert seen


def test_only_another_languages_window_is_headed():
    assert all(lm_corpus.other_languages.is_other_language(unit) for unit in ("shell/git", "javascript/@npmcli/git", "c/numpy"))
    assert not any(lm_corpus.other_languages.is_other_language(unit) for unit in ("site-packages/numpy", "stdlib/json", "python-docs"))


def test_a_runs_prose_share_reaches_its_sampler(vocab, smol_tokenizer):
    shares = [[share for share, _ in adapt.ExampleStream(smol_tokenizer, vocab, adapt.parse_args(argv), "t").sampler.groups]
              for argv in ([], ["--prose", "0.5"])]
    assert shares == [[adapt.PROSE_SHARE, 1 - adapt.PROSE_SHARE], [0.5, 0.5]]


def test_the_teacher_reads_the_prefix_and_the_true_middle_at_the_masked_positions(vocab):
    tokens = vocab.encode(TEXT)
    rng = random.Random(11)
    checked = 0
    for _ in range(60):
        example = examples.make_example(tokens, rng, vocab)
        if example is None:
            continue
        ids, prompt_len, target = example.ids, example.prompt_len, example.target
        reading = batches.teacher_reading(example, vocab.special)
        if reading is None:
            continue
        teacher_ids, first, positions = reading
        prefix = ids[ids.index(vocab.special.prefix_mark) + 1 : prompt_len]
        assert teacher_ids[:first] == prefix
        assert vocab.special.end not in teacher_ids and vocab.special.mask not in teacher_ids
        for j in positions:  # what the base reads before canvas position j is the prefix and the middle's start
            assert ids[prompt_len + j] == vocab.special.mask and teacher_ids[first + j] == target[j]
        checked += 1
    assert checked > 20


def test_distillation_pulls_the_adapter_towards_the_base_it_started_from(vocab, tiny_lm):
    """With the base's own distribution as the only target, steps lower the KL term; the
    teacher is the base with the adapter switched off, so it does not move with training."""
    import copy

    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    model = get_peft_model(copy.deepcopy(tiny_lm), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                              init_lora_weights=False))
    tokens = vocab.encode(TEXT)
    rng = random.Random(2)
    example = None
    while example is None or batches.teacher_reading(example, vocab.special) is None:
        example = examples.make_example(tokens, rng, vocab)
    teacher_ids = batches.teacher_reading(example, vocab.special)[0]
    with torch.no_grad(), model.disable_adapter():
        before = model(input_ids=torch.tensor([teacher_ids])).logits
    plain = loss_of(model, [example], vocab, 0.0)
    with_kl = loss_of(model, [example], vocab, 1.0)
    kl = (with_kl - plain).item()
    assert kl > 0  # the random adapter reads the canvas unlike the base reads the text
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=1e-2)
    for _ in range(10):
        optimizer.zero_grad()  # the difference of the two losses is the KL term alone, value and gradient
        (loss_of(model, [example], vocab, 1.0)
         - loss_of(model, [example], vocab, 0.0)).backward()
        optimizer.step()
    with torch.no_grad():
        after_kl = (loss_of(model, [example], vocab, 1.0)
                    - loss_of(model, [example], vocab, 0.0)).item()
        with model.disable_adapter():
            assert torch.equal(model(input_ids=torch.tensor([teacher_ids])).logits, before)
    assert after_kl < kl


def test_a_window_that_begins_a_file_sometimes_has_its_first_line_as_the_middle_and_no_prefix(vocab):
    """The cursor on a new file's first line sends no prefix at all; training shows that case."""
    tokens = vocab.encode(TEXT)
    first_line = vocab.encode("def area(width, height):")
    rng = random.Random(13)
    empty = lines = 0
    for _ in range(400):
        ids, prompt_len, target, _, _ = examples.make_example(tokens, rng, vocab, at_start=True)
        prefix = ids[ids.index(vocab.special.prefix_mark) + 1 : prompt_len]
        if not prefix:
            empty += 1
            middle = target[: target.index(vocab.special.end)] if vocab.special.end in target else target
            assert middle == tokens[: len(middle)]  # the middle is the file's start
            lines += middle == first_line
    assert 40 < empty < 160 and lines > 10  # about FILE_START_SHARE of them
    rng = random.Random(13)
    for _ in range(200):  # elsewhere a middle has a prefix
        ids, prompt_len, *_ = examples.make_example(tokens, rng, vocab)
        assert ids.index(vocab.special.prefix_mark) + 1 < prompt_len


def test_the_sampler_marks_windows_that_begin_their_file(monkeypatch, tmp_path, smol_tokenizer):
    long_text = "".join(f"line {i} of a long file\n" for i in range(400))
    (tmp_path / "long.py").write_text(long_text)
    monkeypatch.setattr(lm_corpus, "files_by_unit", lambda split: {"site-packages/p": [tmp_path / "long.py"]})
    sampler = lm_corpus.DocumentSampler("train", smol_tokenizer, random.Random(4))
    windows = [sampler.next_window() for _ in range(300)]
    starts = [w for w in windows if w.at_start]
    assert 10 < len(starts) < 60  # about FILE_START_SHARE of a long file's windows
    assert all(smol_tokenizer.decode(w.tokens).startswith("line 0 of") for w in starts)
    assert not any(smol_tokenizer.decode(w.tokens).startswith("line 0 of") for w in windows if not w.at_start)


def test_half_the_examples_read_the_project_context_before_the_prefix(vocab):
    tokens = vocab.encode(TEXT)
    snippet = "# geometry/shapes.py\ndef perimeter(width, height):\n    return 2 * (width + height)\n"
    asked = []

    def snippets(prefix, suffix):
        asked.append((prefix, suffix))
        return (snippet,)

    rng = random.Random(17)
    with_context = 0
    for _ in range(200):
        ids, prompt_len, *_ = examples.make_example(tokens, rng, vocab, snippets=snippets)
        prefix = ids[ids.index(vocab.special.prefix_mark) + 1 : prompt_len]
        context = vocab.encode(snippet)
        if prefix[: len(context)] == context:
            with_context += 1
            assert vocab.decode(prefix[len(context):]) in TEXT  # then the document's own prefix
    assert 60 < with_context < 140
    assert all(prefix in TEXT and suffix in TEXT for prefix, suffix in asked)  # chosen for the text around the middle


def test_the_context_of_a_window_comes_from_other_files_of_its_unit(monkeypatch, tmp_path, smol_tokenizer):
    files = {"shapes.py": "def perimeter(width, height):\n    return 2 * (width + height)\n",
             "area.py": "def area(width, height):\n    return width * height\n",
             "other.py": "import sys\nprint(sys.argv)\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    units = {"site-packages/geometry": [tmp_path / "area.py", tmp_path / "shapes.py"],
             "site-packages/other": [tmp_path / "other.py"]}
    monkeypatch.setattr(lm_corpus, "files_by_unit", lambda split: units)
    sampler = lm_corpus.DocumentSampler("train", smol_tokenizer, random.Random(2))
    window = next(w for w in iter(sampler.next_window, None) if w.path.name == "area.py")
    found = sampler.snippets(window, "def area(width, height):\n", "")
    assert found and all("perimeter" in s and "area(" not in s and "sys" not in s for s in found)
    assert found[0].startswith(f"# {tmp_path.name}/shapes.py\n")


def test_a_self_target_is_the_engines_result_masked_from_a_point_on_or_at_random(vocab):
    written = vocab.encode("return width * height")
    record = {"prefix": vocab.encode("def area(width, height):\n    "), "suffix": vocab.encode("\n\n"),
              "snippets": [], "one_line": True, "target": written}
    rng = random.Random(2)
    tails = 0
    for _ in range(60):
        ids, prompt_len, target, weight, both_ways = examples.self_example(record, rng, vocab)
        assert len(target) == len(weight) == len(ids) - prompt_len == examples.CANVAS_SIZES[0] and not both_ways
        assert target[: len(written)] == written and set(target[len(written) :]) == {vocab.special.end}
        shown = ids[prompt_len:]
        assert all((shown[i] == vocab.special.mask) == bool(weight[i]) for i in range(len(shown)))
        assert all(shown[i] in (target[i], vocab.special.mask) for i in range(len(shown)))
        first = weight.index(1.0)
        tails += first < len(written) and all(weight[first:])  # the engine's state: written start, masked rest
    assert tails > 30


def test_a_widened_adapter_computes_what_the_narrow_one_did_and_trains_on(tiny_lm, tmp_path):
    """``--rank``: a trained rank-4 adapter copied into a rank-8 LoRA gives the same logits, and a
    step moves them (the new ranks train); an adapter whose modules the model lacks is refused."""
    import copy

    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    torch.manual_seed(1)
    narrow = get_peft_model(copy.deepcopy(tiny_lm), LoraConfig(r=4, lora_alpha=4, target_modules=["q_proj", "down_proj"],
                                                               init_lora_weights=False))
    narrow.save_pretrained(tmp_path / "narrow")
    x = torch.tensor([[5, 17, 300, 42, 9, 1200]])
    with torch.no_grad():
        expected = PeftModel.from_pretrained(copy.deepcopy(tiny_lm), tmp_path / "narrow")(input_ids=x).logits
        plain = tiny_lm(input_ids=x).logits
    wide = get_peft_model(copy.deepcopy(tiny_lm), adapt.lora_config(8))
    adapt.widen(wide, tmp_path / "narrow")
    assert adapt.adapter_rank(tmp_path / "narrow") == 4
    with torch.no_grad():
        got = wide(input_ids=x).logits
    assert not torch.allclose(expected, plain, atol=1e-3)  # the narrow adapter changes the model
    assert torch.allclose(got, expected, atol=1e-5)
    optimizer = torch.optim.Adam([p for p in wide.parameters() if p.requires_grad], lr=1e-2)
    wide(input_ids=x, labels=x).loss.backward()
    optimizer.step()
    with torch.no_grad():
        assert not torch.allclose(wide(input_ids=x).logits, expected, atol=1e-4)
    other = get_peft_model(copy.deepcopy(tiny_lm), LoraConfig(r=8, lora_alpha=16, target_modules=["k_proj"]))
    with pytest.raises(ValueError):
        adapt.widen(other, tmp_path / "narrow")


def test_unwrapping_joins_wrapped_paragraphs_and_keeps_every_other_block():
    wrapped = ("Requests allows you to send HTTP/1.1 requests extremely easily. There's no need\n"
               "to manually add query strings to your URLs.\n\n"
               "    >>> r = requests.get('https://example.org')\n    >>> r.status_code\n\n"
               "- a list item\n- another one\n\n"
               "A one-line paragraph.\n")
    text = lm_corpus.unwrapped(wrapped)
    assert text.startswith("Requests allows you to send HTTP/1.1 requests extremely easily. There's no need "
                           "to manually add query strings to your URLs.\n\n")
    assert "    >>> r = requests.get('https://example.org')\n    >>> r.status_code\n\n" in text
    assert "- a list item\n- another one\n\n" in text and text.endswith("A one-line paragraph.\n")
    assert lm_corpus.unwrapped(text) == text


def test_the_sampler_unwraps_its_share_of_documentation_files(monkeypatch, tmp_path, smol_tokenizer):
    page = tmp_path / "guide.txt"
    page.write_text("A first line of a paragraph that the source wrapped\nnear eighty columns, then went on.\n")
    monkeypatch.setattr(lm_corpus, "files_by_unit", lambda split: {"docs": [page]})
    for share, breaks in ((0.0, 1), (1.0, 0)):
        sampler = lm_corpus.DocumentSampler("train", smol_tokenizer, random.Random(3), prose_share=1.0, unwrap_share=share)
        window = smol_tokenizer.decode(sampler.next_window().tokens)
        assert window.rstrip("\n").count("\n") == breaks


def test_an_indented_paragraph_is_unwrapped_and_a_literal_block_after_two_colons_is_not():
    text = ("   *context* is an optional object which allows\n   bundling SSL configuration options::\n\n"
            "      ctx = make_context()\n      connect(ctx)\n\n   And a last wrapped\n   paragraph.\n")
    assert lm_corpus.unwrapped(text) == ("   *context* is an optional object which allows bundling SSL configuration options::\n\n"
                                         "      ctx = make_context()\n      connect(ctx)\n\n   And a last wrapped paragraph.\n")


def test_a_causal_example_shows_its_whole_middle_and_learns_every_position(vocab):
    """``--causal``: the middle shown whole, each position predicted from the text before it (the
    reading that writes the engine's text); a fix stays a fix; without it the same examples as before."""
    tokens = vocab.encode(TEXT)
    causal = plain = 0
    for seed in range(40):
        example = examples.make_example(tokens, random.Random(seed), vocab, causal=1.0)
        if example is None:
            continue
        shown = example.ids[example.prompt_len :]
        if example.both_ways or shown != example.target:  # a fix: a wrong token or masks to correct
            plain += 1
            continue
        assert vocab.special.mask not in shown and all(w == 1.0 for w in example.weight)
        causal += 1
    assert causal > 15 and plain > 3
    for seed in range(10):
        assert examples.make_example(tokens, random.Random(seed), vocab) == examples.make_example(tokens, random.Random(seed), vocab, causal=0.0)


def test_a_causal_examples_loss_is_a_plain_left_to_right_reading_of_prompt_and_middle(vocab, tiny_lm):
    import copy

    import torch
    import torch.nn.functional as F
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(copy.deepcopy(tiny_lm), LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    tokens = vocab.encode(TEXT)
    example = next(e for seed in range(40) if (e := examples.make_example(tokens, random.Random(seed), vocab, causal=1.0))
                   and not e.both_ways and e.ids[e.prompt_len :] == e.target)
    p, c = example.prompt_len, len(example.target)
    with torch.no_grad():
        logits = tiny_lm(input_ids=torch.tensor([example.ids])).logits[0]  # causal all the way
        ar_from = max(2, p - batches.AR_TOKENS)
        expected = (F.cross_entropy(logits[p - 1 : p - 1 + c], torch.tensor(example.target))
                    + 0.5 * F.cross_entropy(logits[ar_from - 1 : p - 1], torch.tensor(example.ids[ar_from:p])))
        assert loss_of(model, [example], vocab, 0.0).item() == pytest.approx(expected.item(), abs=1e-4)


def test_the_prefix_an_example_shows_is_bounded_by_max_prefix(vocab):
    tokens = vocab.encode(TEXT * 30)
    mark = vocab.special.prefix_mark

    def longest_prefix(max_prefix):
        lengths = []
        for seed in range(60):
            example = examples.make_example(tokens, random.Random(seed), vocab, max_prefix=max_prefix)
            if example is not None:
                ids, prompt_len = example[0], example[1]
                lengths.append(prompt_len - ids.index(mark) - 1)
        return max(lengths)

    assert longest_prefix(20) <= 20
    assert examples.MAX_PREFIX < longest_prefix(448) <= 448


def test_an_exported_adapter_records_a_longer_prefix_for_the_engine(tmp_path):
    import json

    import torch
    from safetensors.torch import save_file

    from sfumato.model.lm_base import TRAINED_PREFIX, trained_prefix

    for prefix in (None, TRAINED_PREFIX, 448):
        checkpoint, folder = tmp_path / f"c{prefix}", tmp_path / f"a{prefix}"
        checkpoint.mkdir()
        save_file({"a.lora_A.weight": torch.ones(2, 3)}, checkpoint / "adapter_model.safetensors")
        (checkpoint / "adapter_config.json").write_text("{}")
        state = {"step": 3, "examples": 24, "tokens": 900} | ({"prefix": prefix} if prefix else {})
        (checkpoint / "state.json").write_text(json.dumps(state))
        adapt.export(checkpoint, folder)
        assert trained_prefix(folder) == (prefix or TRAINED_PREFIX)
        assert ("prefix" in json.loads((folder / "training.json").read_text())) == (prefix == 448)


LED_TEXT = ("import os\n\n\ndef size(folder):\n    print(folder)\n    count = 0\n    for name in os.listdir(folder):\n"
            "        count += 1\n    print(folder)\n    return count\n\n\n"
            "def greet(person):\n    message = 'Hello, ' + person\n    print(message)\n")


def test_a_suffix_led_middle_is_a_line_that_only_the_suffix_tells(vocab):
    tokens = vocab.encode(LED_TEXT)
    chosen = set()
    for seed in range(60):
        start, length = examples._suffix_led_line(tokens, random.Random(seed), 16, vocab, max_prefix=200)
        assert tokens[start - 1] in vocab.newlines and tokens[start + length] in vocab.newlines
        chosen.add(vocab.decode(tokens[start : start + length]).strip())
    # a line whose names the text before it already shows is not chosen, nor one that names nothing used after it;
    # `message` is one name whether a space or a parenthesis comes before it
    assert "message = 'Hello, ' + person" in chosen and "count = 0" in chosen
    assert not chosen & {"count += 1", "return count", "print(message)"}
    assert examples._suffix_led_line(vocab.encode("x = 1\ny = 2\nz = 3\n"), random.Random(0), 16, vocab, 20) is None


def test_a_suffix_led_example_shows_the_whole_suffix_it_was_chosen_for(vocab):
    tokens = vocab.encode(LED_TEXT)
    special = vocab.special
    for seed in range(30):
        example = examples.make_example(tokens, random.Random(seed), vocab, max_prefix=200, suffix_led=1.0)
        middle = [t for t in example.target if t != special.end]
        at = next(i for i in range(len(tokens)) if tokens[i : i + len(middle)] == middle) + len(middle)
        shown = example.ids[example.ids.index(special.suffix_mark) + 1 : example.ids.index(special.prefix_mark)]
        assert shown == tokens[at : at + examples.MAX_SUFFIX]


def test_a_batch_loss_is_the_mean_of_its_examples_losses_taken_one_at_a_time(vocab, tiny_lm):
    """Padding to one length and one mask per example change nothing: each example reads only its
    own tokens, as it would alone (fixes, infills and causal examples of different lengths mixed)."""
    import copy

    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(1)
    model = get_peft_model(copy.deepcopy(tiny_lm), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                              init_lora_weights=False))
    tokens = vocab.encode(TEXT * 3)
    rng = random.Random(5)
    chosen = []
    while len(chosen) < 6:
        example = examples.make_example(tokens, rng, vocab, causal=0.3)
        if example is not None:
            chosen.append(example)
    assert len({len(e.ids) for e in chosen}) > 1 and any(e.both_ways for e in chosen) and not all(e.both_ways for e in chosen)
    with torch.no_grad():
        for distill in (0.0, 0.5):
            together = loss_of(model, chosen, vocab, distill).item()
            alone = sum(loss_of(model, [e], vocab, distill).item() for e in chosen) / len(chosen)
            assert together == pytest.approx(alone, rel=1e-4)


def test_the_example_stream_gives_batches_of_similar_length_and_counts_their_tokens(vocab, smol_tokenizer):
    args = adapt.parse_args(["--batch", "4", "--causal", "0.5", "--suffix-led", "0.3", "--distill", "0.5"])
    stream = iter(adapt.ExampleStream(smol_tokenizer, vocab, args, seed="t"))
    spreads, widths = [], []
    for _ in range(2 * adapt.POOL):
        batch = next(stream)
        lengths = (batch["mask"][:, 0].diagonal(dim1=1, dim2=2) & batch["mask"][:, 0, :, 0]).sum(1)
        assert batch["ids"].shape[0] == 4 and int(batch["tokens"]) == int(lengths.sum())
        spreads.append(int(lengths.max() - lengths.min()))
        widths.append(batch["ids"].shape[1])
    assert sorted(spreads)[len(spreads) // 2] < max(widths) // 4  # sorted pools: a typical batch pads little


@pytest.mark.parametrize("pays", [True, False])
def test_training_multiplies_in_bfloat16_on_a_gpu_and_where_the_cpu_does_it_faster(monkeypatch, pays):
    from sfumato.model import lm_bfloat16

    monkeypatch.setattr(lm_bfloat16, "bfloat16_pays", lambda: pays)
    assert adapt.mixed_precision("cpu") == pays and adapt.mixed_precision("cuda")
