"""Training text that already exists on this machine, split by file into train and held-out.

Sources: the Python standard library's modules (not its test suite), the sources of installed
packages, and English documentation where Debian's documentation packages are installed
(``DOC_SOURCES``: reST sources, or the text of HTML pages where only HTML ships).
A file belongs to the held-out split when a hash of its name says so, so the split is stable
across machines and runs, and no held-out file is ever trained on. Exact duplicates (same
content under different paths) are kept once, in whichever split their first path falls.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import re
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sfumato.model.training.html_text import page_text

HELD_OUT_PERCENT = 2
MAX_FILE_BYTES = 400_000
# Installed packages whose licence metadata names a copyleft (GPL, LGPL, AGPL, MPL) or proprietary
# licence are left out, so the weights derive only from permissively licensed text (see the model
# card's data section). Read from the metadata, so the rule holds on any machine the corpus is built.
RESTRICTED_LICENCE = re.compile(r"\b(A?L?GPL|MPL|Mozilla Public|Proprietary|NVIDIA)", re.IGNORECASE)


# Documentation packages (Debian) whose text is permissively licensed, by their debian/copyright:
# (source name, folder, glob). python3-doc: PSF-2.0; sphinx-doc: BSD-2-Clause; python-requests-doc:
# Apache-2.0; python-django-doc: BSD-3-Clause (Django 3.2's documentation, HTML only).
DOC_SOURCES = [
    ("python-docs", Path("/usr/share/doc/python3-doc/html/_sources"), "**/*.txt"),
    ("sphinx-docs", Path("/usr/share/doc/sphinx-doc/html/_sources"), "**/*.txt"),
    ("requests-docs", Path("/usr/share/doc/python-requests-doc/html/_sources"), "**/*.txt"),
    ("django-docs", Path("/usr/share/doc/python-django-doc/html"), "**/*.html"),
]


@dataclass(frozen=True)
class Document:
    source: str  # "stdlib", "site-packages" or a documentation source of DOC_SOURCES
    name: str  # path relative to its source root: the key of the split
    text: str


def split_of(name: str) -> str:
    """'heldout' for about HELD_OUT_PERCENT of names, 'train' for the rest; stable everywhere."""
    bucket = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") % 100
    return "heldout" if bucket < HELD_OUT_PERCENT else "train"


def heldout_part(name: str) -> str:
    """Held-out documents are halved, again by name: 'dev' tunes sampler settings and compares
    training runs, 'test' gives the reported figures and is never tuned on."""
    return "dev" if hashlib.sha256(("part:" + name).encode()).digest()[0] % 2 == 0 else "test"


def source_roots() -> list[tuple[str, Path, str]]:
    """(source name, root folder, glob) for every source found on this machine."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    roots = [("stdlib", stdlib, "**/*.py")]
    purelib = Path(sysconfig.get_paths()["purelib"])
    roots.append(("site-packages", purelib, "**/*.py"))
    roots += [(name, root, pattern) for name, root, pattern in DOC_SOURCES if root.is_dir()]
    return roots


@functools.cache
def restricted_packages() -> frozenset[str]:
    """Top-level names (folders and modules) in site-packages of distributions with a restricted licence."""
    names = set()
    for dist in importlib.metadata.distributions():
        meta = dist.metadata
        licence = " ".join([
            meta.get("License-Expression") or "", (meta.get("License") or "")[:200],
            *(c for c in meta.get_all("Classifier") or [] if c.startswith("License")),
        ])
        if RESTRICTED_LICENCE.search(licence):
            names.update(f.parts[0] for f in dist.files or () if f.parts[0] not in ("..", "__pycache__")
                         and not f.parts[0].endswith((".dist-info", ".egg-info")))
    return frozenset(names)


def skipped(source: str, rel: str) -> bool:
    parts = rel.split("/")
    if source == "stdlib":
        return "site-packages" in parts or "test" in parts or "tests" in parts or "idle_test" in parts
    if source == "site-packages":
        return parts[0] in restricted_packages()
    return False


def iter_documents(split: str | None = None, sources: Sequence[str] | None = None) -> Iterator[Document]:
    """Every de-duplicated document of ``split`` ('train', 'heldout' or None for both), from
    ``sources`` (names as in ``source_roots``; None: every source)."""
    seen: set[bytes] = set()
    for source, root, pattern in source_roots():
        if sources is not None and source not in sources:
            continue
        for path in sorted(root.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            if skipped(source, rel) or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            try:
                text = path.read_text(encoding="utf-8")
                if path.suffix == ".html":
                    text = page_text(text)
            except (UnicodeDecodeError, OSError):
                continue
            digest = hashlib.sha256(text.encode()).digest()
            if digest in seen or not text.strip():
                continue
            seen.add(digest)
            name = f"{source}/{rel}"
            if split is None or split_of(name) == split:
                yield Document(source, name, text)
