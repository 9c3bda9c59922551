"""The project tokenizer round-trips any text exactly and keeps DiffusionGemma's special ids."""

from hypothesis import given, settings
from hypothesis import strategies as st

from sfumato.model.tokenizer import GAP_TOKENS, MASK, decode_ids, encode_text, special_id
from sfumato.model.token_text import split_text, token_bytes_table

TRICKY = [
    "def f(x):\n\treturn x  # tab\r\n",
    "non\u00a0breaking space",
    "中文 and 日本語 and 한국어",
    "emoji 😀👩‍💻 mixed",
    'print("<eos>", "<mask>", "<fim_prefix>", "<gap_3>")',
    "",
    "   leading spaces",
    "\r\n\r\n\n",
]


def test_special_ids_match_diffusion_gemma(project_tokenizer):
    assert (project_tokenizer.pad_token_id, project_tokenizer.eos_token_id, project_tokenizer.bos_token_id) == (0, 1, 2)
    assert special_id(project_tokenizer, MASK) == project_tokenizer.mask_token_id
    assert len({special_id(project_tokenizer, gap) for gap in GAP_TOKENS}) == len(GAP_TOKENS)


def test_tricky_strings_round_trip(project_tokenizer):
    for text in TRICKY:
        assert decode_ids(project_tokenizer, encode_text(project_tokenizer, text)) == text


def test_literal_special_tokens_stay_text(project_tokenizer):
    ids = encode_text(project_tokenizer, "x = '<eos>'")
    assert project_tokenizer.eos_token_id not in ids


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_round_trips(project_tokenizer, text):
    assert decode_ids(project_tokenizer, encode_text(project_tokenizer, text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1))
def test_per_token_pieces_spell_the_text(project_tokenizer, text):
    table = token_bytes_table(project_tokenizer)
    ids = encode_text(project_tokenizer, text)
    assert "".join(split_text(table, ids)) == text


def test_partial_utf8_prefix_does_not_crash(project_tokenizer):
    table = token_bytes_table(project_tokenizer)
    ids = encode_text(project_tokenizer, "😀中")
    for cut in range(len(ids) + 1):
        pieces = split_text(table, ids[:cut])
        assert len(pieces) == cut


def test_a_cut_inside_a_character_is_dropped(project_tokenizer):
    from sfumato.model.token_text import drop_incomplete_tail

    table = token_bytes_table(project_tokenizer)
    ids = encode_text(project_tokenizer, "ok 😀")
    for cut in range(len(ids) + 1):
        kept = drop_incomplete_tail(table, ids[:cut])
        assert "\ufffd" not in decode_ids(project_tokenizer, kept)
        assert "ok 😀".startswith(decode_ids(project_tokenizer, kept))
