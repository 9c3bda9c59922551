"""Argument parsing for the ``sfumato`` commands: a usage error is an exception, not argparse's exit."""

from __future__ import annotations

import argparse

from sfumato.model.quantization import CHOICES as QUANTIZE_CHOICES  # imports no torch


class UsageError(Exception):
    """Bad arguments: exit code 2."""


class ArgumentParser(argparse.ArgumentParser):
    """Usage errors become ``UsageError`` (exit 2, one line) instead of argparse's own exit."""

    def error(self, message: str):  # argparse would print usage and exit itself
        raise UsageError(message)


def hardware_options(parser: argparse.ArgumentParser, default_device: str | None = "auto") -> None:
    """``--device`` and ``--quantize``, the same for the editor and every subcommand.

    ``default_device=None`` leaves both unset (None) when not given: the editor then takes Settings'.
    """
    parser.add_argument("--device", default=default_device,
                        help="auto, cpu, cuda, cuda:N or mps (auto: the first GPU; a model too big for it is "
                        "spread over every GPU and CPU memory)")
    parser.add_argument("--quantize", choices=QUANTIZE_CHOICES, default=None if default_device is None else "auto",
                        help="store the weights in fewer bits: int8 (CPU or CUDA), int4 or nf4 (CUDA), which "
                        "need pip install 'sfumato[gpu]' for checkpoints; none: full precision (float32 on the CPU); auto (the "
                        "default): full, but the embedded model's layers in bfloat16 on a CPU that runs it faster, else with "
                        "float16 weights and float32 sums")
