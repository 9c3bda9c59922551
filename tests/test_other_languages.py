"""Held-out lines beyond Python: which files count as hand-written code of another language."""

from __future__ import annotations

from sfumato.model.training import other_languages
from sfumato.model.training.corpus import Document
from sfumato.model.training.edit_tasks import line_tasks
from sfumato.model.training.evaluate_lm import score

SCRIPT = "#!/bin/sh\nset -e\n" + "".join(f'echo "step {k}"\n' for k in range(10))


def test_minified_or_short_files_are_not_hand_written():
    assert other_languages.hand_written(SCRIPT)
    assert not other_languages.hand_written("var a=1;" * 100 + "\n" * 10)  # one minified line
    assert not other_languages.hand_written("#!/bin/sh\necho hi\n")  # too few lines to cut one from


def test_a_command_counts_as_shell_only_with_a_shell_shebang(tmp_path):
    (tmp_path / "tool").write_text(SCRIPT)
    (tmp_path / "perl-tool").write_text("#!/usr/bin/perl\n" + SCRIPT.split("\n", 1)[1])
    (tmp_path / "binary").write_bytes(b"#!/bin/sh\n\xff\xfe" + SCRIPT.encode())
    assert other_languages._read(tmp_path / "tool", "shell") == SCRIPT
    assert other_languages._read(tmp_path / "perl-tool", "shell") is None
    assert other_languages._read(tmp_path / "binary", "shell") is None  # not UTF-8


def test_other_language_lines_are_scored_by_language_too():
    docs = [Document("shell", "shell:/bin/a", SCRIPT), Document("c", "c:/x.c", "int x;\n" * 10)]
    assert line_tasks(docs, 5, 0) == []  # code sources only by default: these are none
    tasks = line_tasks(docs, 20, 0, code_only=False)
    report = score("other", tasks, [t.middle for t in tasks[:10]] + ["wrong"] * 10)
    assert sum(group["n"] for group in report["by_language"].values()) == 20
    assert report["exact"] == 0.5 and set(report["by_language"]) <= {"shell", "c"}
