"""Project context: snippets of other open files and the folder that share names with the cursor.

The idea of llama.vim's ring buffer of chunks: cut the other files into chunks of a few lines,
keep the ones that share the most identifiers with the text around the cursor, and put them in
the prompt before the document, within a fixed share of its budget. The editor cuts the files
(``file_chunks``: once per version of a folder's file) and picks the nearest (``nearest_chunks``);
backends lay the snippets out (``context_tokens``); the document's own name heads its prefix
where that tells the model its language (``document_header``). An open folder's files are read by
``read_folder_files``, within bounds, for ``sfumato.app.folder_context`` (which chooses the files
that may be sent).
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sfumato.model.regular_file import open_regular
from sfumato.model.template import GAP_PATTERN

CHUNK_LINES = 16
PROMPT_SNIPPETS = 8  # sent with a request, nearest first; a prompt holds those that fit
AROUND_CHARS = 1500  # the text either side of the cursor whose names are looked for
CONTEXT_SHARE = 4  # snippets take at most 1/CONTEXT_SHARE of a prompt budget
# How much of an open folder the context reads
MAX_FOLDER_FILES = 2000
MAX_FOLDER_FILE_BYTES = 256 << 10  # larger files (data, generated code, logs) are left out
MAX_FOLDER_BYTES = 8 << 20
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
PROSE_SUFFIXES = (".md", ".markdown", ".txt", ".text", ".rst", ".adoc")  # files of paragraphs, not code
HEADER_LINE = re.compile(r"#\s*[\w.-]+\.\w+")  # a comment holding only a file name: ``named``'s form


@dataclass(frozen=True)
class Chunk:
    """A run of lines of one file, as a snippet (headed by the file's name), and the names in it."""

    snippet: str
    names: frozenset[str]


def _names(text: str) -> set[str]:
    return set(IDENTIFIER.findall(text))


def chunks(text: str, lines: int = CHUNK_LINES) -> Iterable[str]:
    """Non-overlapping runs of ``lines`` lines, blank runs left out."""
    all_lines = text.split("\n")
    for start in range(0, len(all_lines), lines):
        chunk = "\n".join(all_lines[start : start + lines])
        if chunk.strip():
            yield chunk


def file_chunks(name: str, text: str) -> tuple[Chunk, ...]:
    """``text``'s chunks that hold a name, ready to be scored (done once per file version: the
    editor keeps them for the folder's files). A chunk with a template's ``[MASK]`` gap is left out:
    a gap is not text, and the model copied one into a rewrite (``return [MASK:12]``)."""
    found = ((chunk, frozenset(_names(chunk))) for chunk in chunks(text) if not GAP_PATTERN.search(chunk))
    return tuple(Chunk(f"{named(name)}{chunk}\n", names) for chunk, names in found if names)


def named(name: str) -> str:
    """The line that heads a file's text in a prompt: its name after ``#``."""
    return f"# {name}\n"


def document_header(file_name: str) -> str:
    """What heads the document's own prefix: its name as a snippet's (``named``), for a code file
    other than Python's, where the text alone may not tell its language (held-out lines of
    JavaScript, shell scripts and C gained); none for an untitled document, a Python file (held-out
    Python lines lost with it, 17 -> 16 of 100, similarity 0.473 -> 0.452) or prose (a Markdown
    word came back "text mining tool" in a README.md): docs/training.md, sessions 42 and 55."""
    unheaded = file_name.lower().endswith((".py", ".pyi", *PROSE_SUFFIXES))
    return named(file_name) if file_name and not unheaded else ""


def copies_the_header(text: str, file_name: str) -> bool:
    """Whether ``text`` is only a line in the header's form (``# build.sh``) where the document was
    headed: the model copied the prompt's form and wrote no code (a real edit at a shell script's
    blank line)."""
    return bool(document_header(file_name)) and bool(HEADER_LINE.fullmatch(text.strip()))


def nearest_chunks(prefix: str, suffix: str, candidates: Iterable[Chunk], limit: int = PROMPT_SNIPPETS) -> tuple[str, ...]:
    """The snippets of the ``candidates`` (chunks of files other than the document) sharing the
    most names with the text around the cursor (by Jaccard similarity), nearest first."""
    return ProjectChunks(tuple(candidates)).nearest(prefix, suffix, limit)


class ChunkIndex:
    """Chunks of files (an open folder's) looked up by the names in them, so that choosing a
    request's snippets touches only the chunks that share a name with the text around the cursor.
    Scored one by one, a folder at the context's bound (14,000 chunks) took 45 ms of the UI thread
    at every cursor rest; looked up, 28 ms (common names such as ``self`` sit in most chunks)."""

    def __init__(self, chunks: Iterable[tuple[str, Chunk]]):
        self.chunks = list(chunks)  # (the file's path, a chunk of it)
        self._holding: dict[str, list[int]] = {}
        for position, (_, chunk) in enumerate(self.chunks):
            for name in chunk.names:
                self._holding.setdefault(name, []).append(position)

    def shared(self, wanted: set[str]) -> dict[int, int]:
        """Position of each chunk that holds a name of ``wanted`` -> how many it holds."""
        counts: dict[int, int] = {}
        for name in wanted:
            for position in self._holding.get(name, ()):
                counts[position] = counts.get(position, 0) + 1
        return counts


@dataclass(frozen=True)
class ProjectChunks:
    """What a request's snippets are chosen from: ``listed`` chunks (the other open tabs'), then
    those of ``index`` (the open folder's) but the files in ``left_out`` (open in a tab: the tab's
    text wins over the file on disk)."""

    listed: Sequence[Chunk] = ()
    index: ChunkIndex | None = None
    left_out: frozenset[str] = frozenset()

    def __iter__(self):
        yield from self.listed
        if self.index is not None:
            yield from (chunk for path, chunk in self.index.chunks if path not in self.left_out)

    def nearest(self, prefix: str, suffix: str, limit: int = PROMPT_SNIPPETS) -> tuple[str, ...]:
        """The ``limit`` snippets sharing the most names with the text around the cursor (by
        Jaccard similarity), nearest first; of equals, the one listed first."""
        wanted = _names(prefix[-AROUND_CHARS:] + suffix[:AROUND_CHARS])
        if not wanted:
            return ()
        shared = [(position, chunk, len(chunk.names & wanted)) for position, chunk in enumerate(self.listed)]
        if self.index is not None:
            for position, count in self.index.shared(wanted).items():
                path, chunk = self.index.chunks[position]
                if path not in self.left_out:
                    shared.append((len(self.listed) + position, chunk, count))
        scored = [(count / (len(chunk.names) + len(wanted) - count), -position, chunk.snippet)  # |names & wanted| / |names | wanted|
                  for position, chunk, count in shared if count]
        return tuple(snippet for _, _, snippet in heapq.nlargest(limit, scored))


def context_tokens(tokenizer, snippets: Sequence[str], budget: int) -> list[int]:
    """The tokens of the first ``PROMPT_SNIPPETS`` snippets that fit in ``budget // CONTEXT_SHARE``,
    nearest snippet last (next to the document); a snippet that does not fit whole is left out."""
    from sfumato.model.tokenizer import encode_text  # here: the editor imports this module before torch is loaded

    room = budget // CONTEXT_SHARE
    kept: list[list[int]] = []
    for snippet in snippets[:PROMPT_SNIPPETS]:
        ids = encode_text(tokenizer, snippet)
        if len(ids) > room:
            continue
        kept.append(ids)
        room -= len(ids)
    return [token for ids in reversed(kept) for token in ids]


@dataclass(frozen=True)
class FolderFile:
    """One file as last read: its stamp (modification time, size) and its chunks (none when it
    is not text, so that it is not read again until it changes)."""

    stamp: tuple[int, int]
    chunks: tuple[Chunk, ...]


def read_folder_files(root: str, files: Iterable[str], previous: Mapping[str, FolderFile]) -> dict[str, FolderFile]:
    """Absolute path -> ``FolderFile`` for ``files`` (paths relative to ``root``, taken in order)
    within the bounds: at most ``MAX_FOLDER_FILES`` text files and ``MAX_FOLDER_BYTES`` of them,
    none over ``MAX_FOLDER_FILE_BYTES``; binary and non-UTF-8 files count for nothing. Files
    unchanged since ``previous`` keep their chunks unread. Plain Python: the editor runs it on a
    worker thread."""
    found: dict[str, FolderFile] = {}
    total = kept = 0
    for relative in files:
        if kept >= MAX_FOLDER_FILES or total >= MAX_FOLDER_BYTES:
            break
        path = os.path.join(root, relative)
        try:
            status = os.stat(path)
            if status.st_size > MAX_FOLDER_FILE_BYTES or total + status.st_size > MAX_FOLDER_BYTES:
                continue
            stamp = (status.st_mtime_ns, status.st_size)
            known = previous.get(path)
            if known is None or known.stamp != stamp:
                with open_regular(path) as file:
                    text = as_context_text(file.read(MAX_FOLDER_FILE_BYTES + 1))
                known = FolderFile(stamp, file_chunks(relative, text) if text is not None else ())
        except OSError:  # gone, unreadable or not a regular file (a named pipe would block the read): left out
            continue
        found[path] = known
        if known.chunks:
            total += status.st_size
            kept += 1
    return found


def as_context_text(data: bytes) -> str | None:
    """``data`` as text for the context, or None when it is binary (a NUL byte) or not UTF-8."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
