"""Held-out lines beyond Python: which files count as hand-written code of another language."""

from __future__ import annotations

from pathlib import Path

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


def test_a_file_belongs_to_its_module_its_debian_package_or_its_folder(monkeypatch, tmp_path):
    (tmp_path / "tool.list").write_text("/usr/bin/tool\n/usr/share/tool/run.sh\n")
    monkeypatch.setattr(other_languages, "DPKG_LISTS", tmp_path)
    other_languages._debian_owners.cache_clear()
    try:
        unit = other_languages.unit_of
        assert unit("javascript", Path("/usr/lib/node_modules/npm/node_modules/chalk/source/index.js")) == "javascript/chalk"
        assert unit("javascript", Path("/usr/lib/node_modules/npm/node_modules/@npmcli/git/lib/spawn.js")) == "javascript/@npmcli/git"
        assert unit("javascript", Path("/usr/share/javascript/jquery/jquery.js")) == "javascript/jquery"
        assert unit("c", Path("/venv/lib/python3.11/site-packages/numpy/core/src/x.c")) == "c/numpy"
        assert unit("shell", Path("/usr/share/tool/run.sh")) == "shell/tool"
        assert unit("shell", Path("/opt/scripts/run.sh")) == "shell//opt/scripts"
    finally:
        other_languages._debian_owners.cache_clear()


def test_held_out_files_are_whole_packages_never_trained_on(monkeypatch):
    files = [(Path(f"/usr/lib/node_modules/m{k}/lib/f{n}.js"), "x\n") for k in range(40) for n in range(3)]
    monkeypatch.setattr(other_languages, "_found", lambda: {"javascript": files})
    held = {doc.name for doc in other_languages.documents_by_language("heldout")["javascript"]}
    trained = {f"javascript:{path}" for paths in other_languages.files_by_unit("train").values() for path in paths}
    assert held and trained and not held & trained and len(held | trained) == len(files)
    modules = {name.split("/")[4] for name in held}
    assert all(f"javascript:/usr/lib/node_modules/{m}/lib/f{n}.js" in held for m in modules for n in range(3))
