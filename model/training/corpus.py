"""Training text that already exists on this machine, split by file into train and held-out.

Sources: the Python standard library's modules (not its test suite), the sources of installed
packages, and Python's documentation as plain text when Debian's ``python3-doc`` is installed.
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HELD_OUT_PERCENT = 2
MAX_FILE_BYTES = 400_000
# Installed packages whose licence metadata names a copyleft (GPL, LGPL, AGPL, MPL) or proprietary
# licence are left out, so the weights derive only from permissively licensed text (see the model
# card's data section). Read from the metadata, so the rule holds on any machine the corpus is built.
RESTRICTED_LICENCE = re.compile(r"\b(A?L?GPL|MPL|Mozilla Public|Proprietary|NVIDIA)", re.IGNORECASE)


@dataclass(frozen=True)
class Document:
    source: str  # "stdlib", "site-packages" or "python-docs"
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
    docs = Path("/usr/share/doc/python3-doc/html/_sources")
    if docs.is_dir():
        roots.append(("python-docs", docs, "**/*.txt"))
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


def _skip(source: str, rel: str) -> bool:
    parts = rel.split("/")
    if source == "stdlib":
        return "site-packages" in parts or "test" in parts or "tests" in parts or "idle_test" in parts
    if source == "site-packages":
        return parts[0] in restricted_packages()
    return False


def iter_documents(split: str | None = None) -> Iterator[Document]:
    """Every de-duplicated document of ``split`` ('train', 'heldout' or None for both)."""
    seen: set[bytes] = set()
    for source, root, pattern in source_roots():
        for path in sorted(root.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            if _skip(source, rel) or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            digest = hashlib.sha256(text.encode()).digest()
            if digest in seen or not text.strip():
                continue
            seen.add(digest)
            name = f"{source}/{rel}"
            if split is None or split_of(name) == split:
                yield Document(source, name, text)
