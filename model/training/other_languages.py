"""Code in languages beside Python: JavaScript, shell and C, split by whole package.

These are the files a Debian machine with this project's tools carries: npm's own modules and the
packaged JavaScript libraries (not MathJax: its font tables are data), the shell scripts among the
system's commands, the C examples of ``-dev`` packages and the C checks numpy ships. Minified or
generated files (long lines) are left out: nobody edits them by hand. A unit is the package a file
belongs to (an npm module, a Python distribution, or the Debian package that installed it); about
``HELD_OUT_PERCENT`` of each language's units, chosen by a hash of their names, are held out and
never trained on (``adapt --other``). Another machine finds other files, so figures from here are
this machine's.
"""

from __future__ import annotations

import functools
import re
import sysconfig
from collections import defaultdict
from pathlib import Path

from sfumato.model.training.corpus import MAX_FILE_BYTES, Document, hash_bucket

SHEBANG = re.compile(rb"#!\s*/(?:usr/)?bin/(?:env\s+)?(?:ba|da)?sh\b")
LONGEST_LINE = 300  # a longer line marks a minified or generated file
MEAN_LINE = 100
GENERATED = re.compile(r"/mathjax/")  # MathJax's font and entity tables, packed twice over
FEWEST_LINES = 8  # lines with text
HELD_OUT_PERCENT = 40  # of each language's units: these languages have few packages here, and the figures need lines
DPKG_LISTS = Path("/var/lib/dpkg/info")


LANGUAGES = ("javascript", "shell", "c")


def _roots() -> dict[str, list[tuple[Path, str]]]:
    purelib = Path(sysconfig.get_paths()["purelib"])
    return {"javascript": [(Path("/usr/lib/node_modules"), "**/*.js"), (Path("/usr/share/javascript"), "**/*.js")],
            "shell": [(Path("/usr/bin"), "*"), (Path("/usr/sbin"), "*"), (Path("/usr/share"), "**/*.sh"),
                      (Path("/usr/lib"), "**/*.sh")],
            "c": [(Path("/usr/share/doc"), "**/*.c"), (purelib, "**/*.c")]}


def is_other_language(unit: str) -> bool:
    """Whether a training unit is one of these languages' (``unit_of``'s ``language/package``)."""
    return unit.split("/", 1)[0] in LANGUAGES


def hand_written(text: str) -> bool:
    """Whether ``text`` reads as code someone edits: enough lines, none minified-long."""
    lines = [line for line in text.split("\n") if line.strip()]
    return (len(lines) >= FEWEST_LINES and max(map(len, lines)) <= LONGEST_LINE
            and sum(map(len, lines)) / len(lines) <= MEAN_LINE)


def _read(path: Path, language: str) -> str | None:
    if GENERATED.search(path.as_posix()):
        return None
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    if language == "shell" and path.suffix != ".sh" and not SHEBANG.match(raw):
        return None  # a command that is no shell script
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if hand_written(text) else None


@functools.cache
def _debian_owners() -> dict[str, str]:
    """Each installed file's Debian package, read from dpkg's file lists."""
    owners = {}
    for listing in sorted(DPKG_LISTS.glob("*.list")) if DPKG_LISTS.is_dir() else ():
        package = listing.stem.split(":")[0]
        for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
            owners[line] = package
    return owners


def unit_of(language: str, path: Path) -> str:
    """``language/package``: the npm module or Python distribution a file sits in, else the Debian
    package that installed it, else its folder."""
    parts = path.parts
    for container in ("node_modules", "nodejs", "javascript", "site-packages"):
        if container in parts[:-1]:
            at = len(parts) - 1 - parts[::-1].index(container)
            name = parts[at + 1 : at + 3 if parts[at + 1].startswith("@") else at + 2]
            if name and at + len(name) < len(parts) - 1:
                return f"{language}/{'/'.join(name)}"
    owner = _debian_owners().get(path.as_posix()) or _debian_owners().get(path.resolve().as_posix())
    return f"{language}/{owner or path.parent.as_posix()}"


def split_of_unit(unit: str) -> str:
    return "heldout" if hash_bucket(unit) < HELD_OUT_PERCENT else "train"


@functools.cache
def _found() -> dict[str, list[tuple[Path, str]]]:
    """Each language's hand-written files found here with their text, in a stable order."""
    found = {}
    for language, roots in _roots().items():
        paths = sorted({path for root, pattern in roots if root.is_dir() for path in root.glob(pattern)})
        found[language] = [(path, text) for path in paths if (text := _read(path, language))]
    return found


def documents_by_language(split: str = "heldout") -> dict[str, list[Document]]:
    """Each language's files of ``split`` (a language with none is left out), named ``language:path``."""
    found = {}
    for language, files in _found().items():
        documents = [Document(language, f"{language}:{path}", text) for path, text in files
                     if split_of_unit(unit_of(language, path)) == split]
        if documents:
            found[language] = documents
    return found


def files_by_unit(split: str) -> dict[str, list[Path]]:
    """Every language's files of ``split`` by unit, as ``lm_corpus.files_by_unit`` gives Python's."""
    units: dict[str, list[Path]] = defaultdict(list)
    for language, files in _found().items():
        for path, _ in files:
            unit = unit_of(language, path)
            if split_of_unit(unit) == split:
                units[unit].append(path)
    return dict(units)
