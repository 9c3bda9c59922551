"""The project's tokenizer (``resources/tokenizer``): byte-level BPE trained on local code and prose,
with the special tokens of the FIM layout (``sfumato.model.layout``). The DiffusionGemma and
masked-diffusion backends encode and decode with any checkpoint's own tokenizer through these helpers; this one
is the vocabulary of the tests' tiny models and of the tools' random ones.

Byte-level BPE can spell any string, so encode -> decode is the identity for every text
(tabs, CRLF, NBSP, CJK, emoji). Special tokens are only recognised when the engine builds
a prompt itself; user text is always encoded with ``split_special_tokens=True`` so that a
literal "<eos>" inside a source file stays text.

Ids 0, 1, 2 are DiffusionGemma's pad, eos and bos; the rest of the specials follow.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from transformers import PreTrainedTokenizerFast

MASK = "<mask>"
FIM_PREFIX, FIM_SUFFIX, FIM_MIDDLE = "<fim_prefix>", "<fim_suffix>", "<fim_middle>"
BOI, EOI, IMAGE = "<boi>", "<eoi>", "<image>"  # DiffusionGemma's config needs these ids
N_GAPS = 16
GAP_TOKENS = [f"<gap_{i}>" for i in range(N_GAPS)]


def load_tokenizer(folder: str | Path) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast.from_pretrained(str(folder))


def encode_text(tokenizer: PreTrainedTokenizerFast, text: str) -> list[int]:
    """Token ids of user text; special-token spellings inside it stay plain text."""
    return tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)


def decode_ids(tokenizer: PreTrainedTokenizerFast, ids: Iterable[int]) -> str:
    """Text of generated ids, keeping every character (no space clean-up)."""
    return tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)


def special_id(tokenizer: PreTrainedTokenizerFast, token: str) -> int:
    token_id = tokenizer.convert_tokens_to_ids(token)
    if token_id is None or token_id == tokenizer.unk_token_id:
        raise KeyError(f"tokenizer has no {token} token")
    return token_id
