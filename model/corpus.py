"""Training text that already exists on this machine, split by file into train and held-out.

Sources: the Python standard library's modules (not its test suite), the sources of installed
packages, and Python's documentation as plain text when Debian's ``python3-doc`` is installed.
A file belongs to the held-out split when a hash of its name says so, so the split is stable
across machines and runs, and no held-out file is ever trained on. Exact duplicates (same
content under different paths) are kept once, in whichever split their first path falls.
"""

from __future__ import annotations

import hashlib
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HELD_OUT_PERCENT = 2
MAX_FILE_BYTES = 400_000
# Installed packages under copyleft licences (GPL, LGPL, MPL) are left out, so the shipped
# weights derive only from permissively licensed text (see the model card's data section).
COPYLEFT_PACKAGES = {
    "PyInstaller", "_pyinstaller_hooks_contrib", "PySide6", "shiboken6", "hypothesis", "_hypothesis_ftz_detector.py",
    "_hypothesis_globals.py", "_hypothesis_pytestplugin.py", "tqdm",
}


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


def _skip(source: str, rel: str) -> bool:
    parts = rel.split("/")
    if source == "stdlib":
        return "site-packages" in parts or "test" in parts or "tests" in parts or "idle_test" in parts
    if source == "site-packages":
        return parts[0] in COPYLEFT_PACKAGES
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
