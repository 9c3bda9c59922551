"""Seventeen everyday edits, sent to the embedded model as the editor sends them, and whether a
user would keep each result.

    python packaging/edit_kinds.py [--adapter FOLDER] [--int8] [--untitled] [--out build/edit-kinds.json]

Each case is a small file of our own (named in ``FILE_NAMES``) with the cursor (``⟦⟧``), a selection (``⟦selected text⟧``)
or ``[MASK]`` gaps; the request is built by the editor's own helpers (``sfumato.app.infill``: the
text around the region, a cursor infill as the rest of the line, a rewrite at the default strength
or the case's), and the result is kept when it matches what the case accepts, written down before
any run: the line a user would have typed, or for open-ended edits a pattern (a docstring that
names the bounds, a loop line that uses the loop's variable). Prints one line per case and the
count kept.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

CURSOR = re.compile(r"⟦(.*?)⟧", re.S)
DEFAULT_STRENGTH = 0.6  # sfumato.app.settings' rewrite strength


@dataclass(frozen=True)
class Case:
    name: str
    text: str  # with ⟦⟧ at the cursor, ⟦...⟧ around a selection, or [MASK] gaps
    accept: str  # a regular expression the whole result (stripped) must match
    strength: float = DEFAULT_STRENGTH


CASES = [
    Case("python: a middle line", "def mean(values):\n    total = sum(values)\n    ⟦⟧\n    return total / count\n",
         r"count = len\(values\)"),
    Case("python: the end of a call", 'import os\n\n\ndef config_path(name):\n    return os.path.join(os.path.expanduser("~"), ⟦⟧\n',
         r"""(["'][.\w]+["'], )?name\)"""),
    Case("python: a one-line body", 'def is_palindrome(text):\n    """Return True when text reads the same backwards."""\n    ⟦⟧\n\n\nprint(is_palindrome("level"))\n',
         r"return text == text\[::-1\]"),
    Case("python: a docstring", 'def clamp(value, low, high):\n    """⟦⟧"""\n    return max(low, min(high, value))\n',
         r"(?i).*\b(low|between|range|bounds|limit)\b.*"),
    Case("python: an import", "⟦⟧\nimport sys\n\n\ndef main():\n    args = json.loads(sys.argv[1])\n    print(args)\n",
         r"import json"),
    Case("python: a return", "def area(width, height):\n    ⟦⟧\n\n\nprint(area(2, 3))\n", r"return width \* height"),
    Case("python: a block rewrite", "def doubled(items):\n    ⟦result = []\n    for item in items:\n        result.append(item * 2)\n    return result⟧\n",
         r"(?s)(result = \[\]\s+for item in items:\s+result\.append\(item \* 2\)\s+return result|return \[item \* 2 for item in items\])"),
    Case("python: a typo fixed", "def total(values):\n    result = sum(values)\n    ⟦retrun result⟧\n", r"return result", strength=0.3),
    Case("shell: a line", '#!/bin/sh\nset -e\nout="build"\n⟦⟧\ncp *.txt "$out/"\n', r'mkdir -p "?\$out"?'),
    # a command with the loop's variable as one whole argument (a line looping on ``-${f}`` once passed)
    Case("shell: a loop body", "#!/bin/sh\nfor f in *.log; do\n    ⟦⟧\ndone\n",
         r'[a-z][\w.-]*(?: +\S+)*? +(?:"\$f"|"\$\{f\}"|\$f|\$\{f\})(?: +\S+)*'),
    Case("javascript: a return", "async function load(url) {\n  const response = await fetch(url);\n  ⟦⟧\n}\n",
         r"return (await )?response\.json\(\);?"),
    Case("javascript: an arrow function", "const numbers = [1, 2, 3, 4];\nconst doubled = numbers.map(⟦⟧);\nconsole.log(doubled);\n",
         r"\(?(\w+)\)? => \1 \* 2"),
    Case("markdown: a word", "# Sfumato\n\nSfumato is a text ⟦⟧ for documents and code.\n", r"editor"),
    Case("markdown: a sentence's end", "# Foxes\n\nThe quick brown fox jumps over the ⟦⟧\n", r"lazy dog\.?"),
    Case("template: a call", "import math\n\nroot = math.[MASK](16)  # the square root\n", r"sqrt"),
    Case("template: a config value", '{\n  "name": "sfumato",\n  "version": "1.0.0",\n  "license": "[MASK]"\n}\n',
         r"(MIT|Apache-2\.0|BSD-[23]-Clause|GPL-[23]\.0(-only|-or-later)?|MPL-2\.0|ISC)"),
    Case("template: prose", "Paris is the capital of [MASK].\n", r"France"),
]
# the file each case is typed in (the editor sends a saved file's name; --untitled: none, as before session 55)
FILE_NAMES = {"python": "example.py", "shell": "build.sh", "javascript": "app.js", "markdown": "README.md",
              "template: a call": "roots.py", "template: a config value": "package.json", "template: prose": "capitals.txt"}


def file_name(case: Case) -> str:
    return FILE_NAMES.get(case.name, FILE_NAMES.get(case.name.split(":")[0], ""))


def request_for(case: Case, untitled: bool = False):
    """The engine request the editor builds for the case (``sfumato.app.infill``'s helpers), in
    its file (``FILE_NAMES``) or, ``untitled``, in a document without a name."""
    from PySide6.QtGui import QTextDocument

    from sfumato.app.infill import InfillOptions, region_request, surroundings
    from sfumato.model.api import TemplateRequest
    from sfumato.model.project_context import ProjectChunks
    from sfumato.model.template import find_gaps, segments_of

    if "[MASK]" in case.text:
        gaps = find_gaps(case.text, InfillOptions().gap_tokens)
        return TemplateRequest(segments=segments_of(case.text, gaps), max_new_tokens=tuple(g.max_new_tokens for g in gaps),
                               file_name="" if untitled else file_name(case))
    marked = CURSOR.search(case.text)
    selection = marked.group(1)
    text = case.text[: marked.start()] + selection + case.text[marked.end() :]
    start, end = marked.start(), marked.start() + len(selection)  # the cases are ASCII around the marks
    document = QTextDocument(text)
    return region_request(surroundings(document, start, end, ProjectChunks(), "" if untitled else file_name(case)), selection, InfillOptions().max_new_tokens,
                          case.strength)


def run(backend, case: Case, untitled: bool = False) -> tuple[str, float]:
    from sfumato.model.api import TemplateRequest

    request = request_for(case, untitled)
    started = time.perf_counter()
    stream = backend.stream_template(request) if isinstance(request, TemplateRequest) else backend.stream([request])
    for drafts in stream:
        pass
    return " | ".join(draft.text for draft in drafts), time.perf_counter() - started


def kept(case: Case, result: str) -> bool:
    text = result.strip()
    if not re.fullmatch(case.accept, text):
        return False
    if case.name.startswith("python: a block"):
        try:
            ast.parse("def f(items):\n    " + text)
        except SyntaxError:
            return False
    return True


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--adapter", type=Path, default=None, help="an adapter checkpoint instead of the shipped one")
    p.add_argument("--int8", action="store_true", help="linear layers in int8 (--quantize int8; the editor runs float16 weights, or bfloat16 where that pays)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--untitled", action="store_true", help="send no file names (as the cases ran before session 55)")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from sfumato.model.loading import as_run_on_cpu, load_embedded

    if args.adapter:
        from sfumato.model.api import ModelInfo
        from sfumato.model.lm_base import load_adapted, trained_prefix
        from sfumato.model.lm_engine import LmDenoiserBackend

        model, tokenizer = load_adapted(args.adapter)
        backend = LmDenoiserBackend(as_run_on_cpu(model, args.int8), tokenizer,
                                    ModelInfo("checkpoint", "lm-denoiser", "cpu", 0, False),
                                    prefix_tokens=trained_prefix(args.adapter))
    else:
        backend = load_embedded(quantize="int8" if args.int8 else None)
    rows = []
    for case in CASES:
        result, seconds = run(backend, case, args.untitled)
        rows.append({"case": case.name, "result": result, "kept": kept(case, result), "seconds": round(seconds, 2)})
        print(f"{'KEPT' if rows[-1]['kept'] else '    '}  {case.name:32s} {seconds:5.1f} s  {result!r}", flush=True)
    print(f"{sum(r['kept'] for r in rows)} of {len(rows)} kept")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
