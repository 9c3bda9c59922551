"""The evaluation's "open folder": the other files of a held-out document's directory.

A held-out document stands for the file being edited; the other files of its directory (not its
subfolders), read by the editor's own reader of an open folder (``read_folder_files``: its bounds,
binary and non-UTF-8 files skipped and not counted), give the task its ``context`` snippets the
way the editor picks them.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from sfumato.model.project_context import Chunk, nearest_chunks, read_folder_files
from sfumato.model.training.corpus import source_roots


def document_path(name: str) -> Path | None:
    """Where the corpus document ``name`` ("source/relative path") lies on this machine."""
    source, _, relative = name.partition("/")
    for root_source, root, _ in source_roots():
        if root_source == source:
            return root / relative
    return None


@functools.cache
def folder_chunks(folder: Path) -> tuple[tuple[str, Chunk], ...]:
    """(file name, chunk) of ``folder``'s text files (not its subfolders), within the bounds."""
    names = sorted(path.name for path in folder.iterdir() if path.is_file() and not path.is_symlink())
    files = read_folder_files(str(folder), names, {})
    return tuple((Path(path).name, chunk) for path, file in files.items() for chunk in file.chunks)


def sibling_snippets(document: str, prefix: str, suffix: str, limit: int) -> tuple[str, ...]:
    """The snippets of the other files in ``document``'s directory nearest to the cursor."""
    path = document_path(document)
    if path is None or not path.parent.is_dir():
        return ()
    others = (chunk for name, chunk in folder_chunks(path.parent) if name != path.name)
    return nearest_chunks(prefix, suffix, others, limit)


def with_sibling_context(tasks, snippets: int) -> list:
    """``tasks`` (``edit_tasks.EditTask``), each with the snippets of its document's directory
    nearest to its cursor."""
    return [dataclasses.replace(task, context=sibling_snippets(task.document, task.prefix, task.suffix, snippets))
            for task in tasks]
