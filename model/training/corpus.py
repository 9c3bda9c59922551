"""Training text that already exists on this machine: where it is and which of it may be used.

Sources: the Python standard library's modules (not its test suite), the sources of installed
packages, and English documentation where Debian's documentation packages are installed
(``DOC_SOURCES``: reST sources, or the text of HTML pages where only HTML ships). How it is split
into training and held-out text is ``sfumato.model.training.lm_corpus``'s (by whole package).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 400_000
# Installed packages whose licence metadata names a copyleft (GPL, LGPL, AGPL, MPL) or proprietary
# licence are left out, so the weights derive only from permissively licensed text (see the model
# card's data section). Read from the metadata, so the rule holds on any machine the corpus is built.
RESTRICTED_LICENCE = re.compile(r"\b(A?L?GPL|MPL|Mozilla Public|Proprietary|NVIDIA)", re.IGNORECASE)


# Documentation packages (Debian) whose text is permissively licensed, by their debian/copyright:
# (source name, Debian package, folder, glob). python3-doc: PSF-2.0; sphinx-doc: BSD-2-Clause;
# python-requests-doc: Apache-2.0; python-django-doc: BSD-3-Clause (Django 3.2's documentation, HTML only).
DOC_SOURCES = [
    ("python-docs", "python3-doc", Path("/usr/share/doc/python3-doc/html/_sources"), "**/*.txt"),
    ("sphinx-docs", "sphinx-doc", Path("/usr/share/doc/sphinx-doc/html/_sources"), "**/*.txt"),
    ("requests-docs", "python-requests-doc", Path("/usr/share/doc/python-requests-doc/html/_sources"), "**/*.txt"),
    ("django-docs", "python-django-doc", Path("/usr/share/doc/python-django-doc/html"), "**/*.html"),
]


@dataclass(frozen=True)
class Document:
    source: str  # "stdlib", "site-packages" or a documentation source of DOC_SOURCES
    name: str  # where it came from (evaluate_lm: its held-out unit and file name)
    text: str


def hash_bucket(unit: str) -> int:
    """0-99 from a hash of a unit's name, the same on every machine: a held-out split's draw."""
    return int.from_bytes(hashlib.sha256(unit.encode()).digest()[:4], "big") % 100


def source_roots() -> list[tuple[str, Path, str]]:
    """(source name, root folder, glob) for every source found on this machine."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    roots = [("stdlib", stdlib, "**/*.py")]
    purelib = Path(sysconfig.get_paths()["purelib"])
    roots.append(("site-packages", purelib, "**/*.py"))
    roots += [(name, root, pattern) for name, _, root, pattern in DOC_SOURCES if root.is_dir()]
    return roots


def missing_documentation() -> str | None:
    """What to install when some documentation source is missing (None when all are there):
    without them training has no prose and the held-out prose tasks are fewer or none."""
    missing = [package for _, package, root, _ in DOC_SOURCES if not root.is_dir()]
    return f"apt-get install {' '.join(missing)}" if missing else None


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
