"""Training the project's byte-level BPE tokenizer on the corpus' train split.

    python -m sfumato.model.training.tokenizer_training resources/tokenizer
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from sfumato.model.tokenizer import BOI, BOS, EOI, EOS, FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX, GAP_TOKENS, IMAGE, MASK, PAD, SPECIAL_TOKENS
from sfumato.model.training.corpus import iter_documents

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


def main(argv: list[str] | None = None) -> None:
    """``python -m sfumato.model.training.tokenizer_training OUT``: train on the corpus' train split and save to OUT."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out")
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    parser.add_argument("--max-documents", type=int, default=20_000)
    args = parser.parse_args(argv)
    documents = (doc.text for _, doc in zip(range(args.max_documents), iter_documents("train")))
    train_tokenizer(documents, args.vocab_size).save_pretrained(args.out)


if __name__ == "__main__":
    main()
