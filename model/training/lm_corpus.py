"""Training and held-out text for the adapted LM, split by whole package and whole prose source.

A unit is a top-level package or module of site-packages or of the standard library, or one
documentation source as a whole. About ``HELD_OUT_PERCENT`` of the code units, chosen by a hash
of their names (stable on every machine), and every source in ``HELD_OUT_PROSE`` are held out:
no file of theirs is ever trained on, so the held-out figures measure code and prose of projects
the model never saw, not other files of a package it learnt.
"""

from __future__ import annotations

import functools
import math
import random
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from sfumato.model.project_context import file_chunks, nearest_chunks
from sfumato.model.training import other_languages
from sfumato.model.training.corpus import MAX_FILE_BYTES, hash_bucket, skipped, source_roots
from sfumato.model.training.html_text import page_text

HELD_OUT_PERCENT = 5
HELD_OUT_PROSE = frozenset({"requests-docs"})
WINDOW_CHARS = 3000
FILE_START_SHARE = 0.1  # of a long file's windows: its beginning (the cursor at a file's start has no prefix)
CONTEXT_FILES = 8  # other files of the window's unit whose chunks a window's project context is chosen from
MARKUP_STARTS = ("..", ">>>", "|", "+-", "+ ", "=", "--", "- ", "* ", "#", ":", "```")  # a line so begun is not running prose


class Window(NamedTuple):
    tokens: list[int]
    at_start: bool  # the window begins where its file does
    unit: str
    path: Path


def unit_of(source: str, rel: str) -> str:
    """'site-packages/numpy', 'stdlib/json', or a documentation source's name."""
    if source in ("stdlib", "site-packages"):
        top = rel.split("/")[0]
        return f"{source}/{top.removesuffix('.py')}"
    return source


def split_of_unit(unit: str) -> str:
    if "/" not in unit:
        return "heldout" if unit in HELD_OUT_PROSE else "train"
    return "heldout" if hash_bucket(unit) < HELD_OUT_PERCENT else "train"


def files_by_unit(split: str) -> dict[str, list[Path]]:
    units: dict[str, list[Path]] = defaultdict(list)
    for source, root, pattern in source_roots():
        for path in root.glob(pattern):
            rel = path.relative_to(root).as_posix()
            unit = unit_of(source, rel)
            if split_of_unit(unit) == split and not skipped(source, rel):
                units[unit].append(path)
    return {unit: sorted(paths) for unit, paths in units.items()}


@functools.lru_cache(maxsize=4096)  # a window's context reads other files of its unit, the same ones again and again
def read_text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return page_text(text) if path.suffix == ".html" else text


def unwrapped(text: str) -> str:
    """``text`` with each paragraph of wrapped prose joined into one line, as Markdown files and
    most editors keep a paragraph (the documentation trained on keeps the reST source's wrapping
    near 80 columns). A paragraph is a block of lines at one indentation, none begun by markup;
    a literal block (after a paragraph that ends with ``::``), code, lists and tables keep their lines."""
    blocks, opened = [], None  # opened: the indentation of a paragraph that ended with "::"
    for block in text.split("\n\n"):
        body = block.strip("\n")
        lines = body.split("\n")
        indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
        if opened is not None and len(indent) <= opened:
            opened = None  # the literal block ended with its indentation
        if (opened is None and len(lines) > 1
                and all(line.strip() and line.startswith(indent) and not line[len(indent) :][:1].isspace()
                        and not line.lstrip().startswith(MARKUP_STARTS) for line in lines)):
            at = block.index(body)
            block = block[:at] + indent + " ".join(line.strip() for line in lines) + block[at + len(body) :]
        if opened is None and body.endswith("::"):
            opened = len(indent)
        blocks.append(block)
    return "\n\n".join(blocks)


class DocumentSampler:
    """Random windows of random files; a unit is drawn with weight sqrt(its files), so the few
    giant packages do not drown the many small ones. With ``prose_share``, that share of windows
    comes from documentation units (drawn the same way among themselves), ``other_share`` from
    JavaScript, shell and C units (``other_languages``), the rest from Python; with
    ``unwrap_share``, that share of documentation files has its paragraphs ``unwrapped``."""

    def __init__(self, split: str, tokenizer, rng: random.Random, prose_share: float | None = None,
                 unwrap_share: float = 0.0, other_share: float = 0.0):
        self.units = files_by_unit(split)
        names = sorted(self.units)
        if prose_share is None:
            self.groups = [(1.0, names)]
        else:
            other = other_languages.files_by_unit(split) if other_share else {}
            self.units |= other
            prose = [name for name in names if "/" not in name]
            python = [name for name in names if "/" in name]
            self.groups = [(prose_share, prose), (other_share, sorted(other)),
                           (1.0 - prose_share - other_share, python)]
            self.groups = [(share, group) for share, group in self.groups if group and share > 0]
        self.tokenizer, self.rng, self.unwrap_share = tokenizer, rng, unwrap_share

    def _unit(self) -> str:
        names = self.rng.choices([g for _, g in self.groups], [share for share, _ in self.groups])[0]
        return self.rng.choices(names, [math.sqrt(len(self.units[name])) for name in names])[0]

    def next_window(self) -> Window:
        while True:
            unit = self._unit()
            path = self.rng.choice(self.units[unit])
            text = read_text(path)
            if text and text.strip():
                break
        if self.unwrap_share and "/" not in unit and self.rng.random() < self.unwrap_share:
            text = unwrapped(text)
        start = 0
        if len(text) > WINDOW_CHARS:
            if self.rng.random() >= FILE_START_SHARE:
                start = text.rfind("\n", 0, self.rng.randrange(len(text) - WINDOW_CHARS)) + 1
            text = text[start : start + WINDOW_CHARS]
        return Window(self.tokenizer(text, add_special_tokens=False).input_ids, start == 0, unit, path)

    def snippets(self, window: Window, prefix: str, suffix: str) -> tuple[str, ...]:
        """What the editor's folder context would send with a middle of ``window``: the chunks
        nearest to its ``prefix`` and ``suffix`` among those of a few other files of its unit."""
        others = [path for path in self.units[window.unit] if path != window.path]
        found = []
        for path in self.rng.sample(others, min(CONTEXT_FILES, len(others))):
            text = read_text(path)
            if text:
                found += file_chunks(f"{path.parent.name}/{path.name}", text)
        return nearest_chunks(prefix, suffix, found)
