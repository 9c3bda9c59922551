"""Argument parsing for the ``sfumato`` commands: a usage error is an exception, not argparse's exit."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """Bad arguments: exit code 2."""


class ArgumentParser(argparse.ArgumentParser):
    """Usage errors become ``UsageError`` (exit 2, one line) instead of argparse's own exit."""

    def error(self, message: str):  # argparse would print usage and exit itself
        raise UsageError(message)
