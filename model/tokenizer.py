"""The project's tokenizer: byte-level BPE trained on local code and prose.

Byte-level BPE can spell any string, so encode -> decode is the identity for every text
(tabs, CRLF, NBSP, CJK, emoji). Special tokens are only recognised when the engine builds
a prompt itself; user text is always encoded with ``split_special_tokens=True`` so that a
literal "<eos>" inside a source file stays text.

Ids 0, 1, 2 are DiffusionGemma's pad, eos and bos; the rest of the specials follow.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

PAD, EOS, BOS, MASK = "<pad>", "<eos>", "<bos>", "<mask>"
FIM_PREFIX, FIM_SUFFIX, FIM_MIDDLE = "<fim_prefix>", "<fim_suffix>", "<fim_middle>"
BOI, EOI, IMAGE = "<boi>", "<eoi>", "<image>"  # DiffusionGemma's config needs these ids
N_GAPS = 16
GAP_TOKENS = [f"<gap_{i}>" for i in range(N_GAPS)]
SPECIAL_TOKENS = [PAD, EOS, BOS, MASK, FIM_PREFIX, FIM_SUFFIX, FIM_MIDDLE, BOI, EOI, IMAGE, *GAP_TOKENS]

DEFAULT_VOCAB_SIZE = 8192


def train_tokenizer(texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``texts`` and wrap it as a transformers fast tokenizer."""
    bpe = Tokenizer(models.BPE())
    # No regex split beyond ByteLevel's own, and no prefix space: decoding must give back the input exactly.
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    return wrap(bpe)


def wrap(bpe: Tokenizer) -> PreTrainedTokenizerFast:
    """Wrap a raw ``tokenizers`` object with the project's special-token roles."""
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token=PAD,
        eos_token=EOS,
        bos_token=BOS,
        mask_token=MASK,
        additional_special_tokens=[FIM_PREFIX, FIM_SUFFIX, FIM_MIDDLE, BOI, EOI, IMAGE, *GAP_TOKENS],
        clean_up_tokenization_spaces=False,
    )


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


def main(argv: list[str] | None = None) -> None:
    """``python -m model.tokenizer OUT``: train on the corpus' train split and save to OUT."""
    import argparse

    from model.training.corpus import iter_documents

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out")
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    parser.add_argument("--max-documents", type=int, default=20_000)
    args = parser.parse_args(argv)
    documents = (doc.text for _, doc in zip(range(args.max_documents), iter_documents("train")))
    train_tokenizer(documents, args.vocab_size).save_pretrained(args.out)


if __name__ == "__main__":
    main()
