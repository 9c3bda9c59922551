"""Code in languages the adapter never trained on, for held-out lines beyond Python.

Training reads Python files and documentation only (``lm_corpus``), so every JavaScript file,
shell script and C file on this machine is held out by construction. These are the ones a
Debian machine with this project's tools carries: npm's own modules and the packaged JavaScript
libraries (not MathJax: its font tables are data), the shell scripts among the system's commands, the C examples of ``-dev`` packages
and the C checks numpy ships. Minified or generated files (long lines) are left out: nobody edits
them by hand. Another machine finds other files, so figures from here are this machine's.
"""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

from sfumato.model.training.corpus import MAX_FILE_BYTES, Document

SHEBANG = re.compile(rb"#!\s*/(?:usr/)?bin/(?:env\s+)?(?:ba|da)?sh\b")
LONGEST_LINE = 300  # a longer line marks a minified or generated file
MEAN_LINE = 100
GENERATED = re.compile(r"/mathjax/")  # MathJax's font and entity tables, packed twice over
FEWEST_LINES = 8  # lines with text


def _roots() -> dict[str, list[tuple[Path, str]]]:
    purelib = Path(sysconfig.get_paths()["purelib"])
    return {"javascript": [(Path("/usr/lib/node_modules"), "**/*.js"), (Path("/usr/share/javascript"), "**/*.js")],
            "shell": [(Path("/usr/bin"), "*"), (Path("/usr/sbin"), "*"), (Path("/usr/share"), "**/*.sh"),
                      (Path("/usr/lib"), "**/*.sh")],
            "c": [(Path("/usr/share/doc"), "**/*.c"), (purelib, "**/*.c")]}


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


def documents_by_language() -> dict[str, list[Document]]:
    """Each language's hand-written files found here (a language with none is left out), named
    ``language:path``, in a stable order."""
    found = {}
    for language, roots in _roots().items():
        paths = sorted({path for root, pattern in roots if root.is_dir() for path in root.glob(pattern)})
        documents = [Document(language, f"{language}:{path}", text) for path in paths if (text := _read(path, language))]
        if documents:
            found[language] = documents
    return found
