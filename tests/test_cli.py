"""The headless commands' contracts: JSON Lines in and out, template filling, exit codes."""

import io
import json
import subprocess
import sys

from sfumato.app.cli import main, split_command


def infill(monkeypatch, capsys, model_dir, lines, *extra):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(("".join(line + "\n" for line in lines)).encode())))
    code = main(["infill", "--jsonl", "--model", str(model_dir), "--seed", "1", *extra])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_jsonl_one_line_out_per_request_in_order(monkeypatch, capsys, tiny_model_dir):
    lines = [
        json.dumps({"id": "a", "prefix": "def f():\n    ", "suffix": "\n", "max_new_tokens": 6}),
        "{not json",
        json.dumps({"id": 7, "prefix": 3}),
        json.dumps(["a list"]),
        json.dumps({"id": "neg", "max_new_tokens": 0}),
        json.dumps({"id": "b", "prefix": "Ünïcödé 中文 ", "suffix": " 😀", "max_new_tokens": 20}),
    ]
    code, records, err = infill(monkeypatch, capsys, tiny_model_dir, lines, "--batch-size", "2")
    assert code == 0 and err == ""
    assert [r.get("id") for r in records] == ["a", None, 7, None, "neg", "b"]
    assert set(records[0]) == {"id", "text", "forward_passes", "tokens", "seconds", "confident"}
    assert records[0]["tokens"] <= 6 and records[0]["forward_passes"] >= 1
    assert all("error" in records[i] for i in (1, 2, 3, 4))
    assert "text" in records[5]


def test_a_jsonl_gap_inside_a_line_is_one_line_unless_the_request_says_otherwise():
    from sfumato.app.cli import parse_request_line

    def one_line(**fields) -> bool:
        return parse_request_line(json.dumps(fields), None, None)[1].one_line

    assert one_line(prefix="import os\nprint(os.", suffix=")\n")  # as `fill` treats a [MASK]
    assert one_line(prefix="x = [1, 2]\ntotal = ", suffix="\nprint(total)\n")
    assert not one_line(prefix="def f(x):\n    ", suffix="\n\nprint(f(2))\n")  # alone on its line: a body may follow
    assert not one_line(prefix="print(os.", suffix=")", one_line=False)
    assert not one_line(prefix="x = ", suffix="\n", init_text="1", strength=0.5)  # a rewrite keeps its lines
    assert one_line(prefix="", suffix="", one_line=True)


def test_a_jsonl_request_may_name_its_file():
    from sfumato.app.cli import parse_request_line

    assert parse_request_line(json.dumps({"prefix": "x", "file_name": "run.sh"}), None, None)[1].file_name == "run.sh"
    for bad in (3, "x" * 10_000):  # no string; longer than any file's name (it would fill the prompt)
        try:
            parse_request_line(json.dumps({"id": 1, "file_name": bad}), None, None)
            raise AssertionError(f"the name {bad!r:.20} was taken")
        except ValueError as error:
            assert "file_name" in str(error)


def test_jsonl_where_no_request_was_answered_exits_1_after_its_error_lines(monkeypatch, capsys, tiny_model_dir):
    code, records, err = infill(monkeypatch, capsys, tiny_model_dir, ["{not json", json.dumps({"id": 2, "max_new_tokens": 10**9})])
    assert code == 1 and [r["id"] for r in records] == [None, 2] and all("error" in r for r in records)
    assert err == "sfumato: none of the 2 requests was answered (each output line says why)\n"


def test_jsonl_empty_input_gives_no_output_and_loads_no_model(monkeypatch, capsys):
    code, records, _ = infill(monkeypatch, capsys, "does-not-exist", [])
    assert code == 0 and records == []


def test_jsonl_with_a_missing_model_is_a_runtime_error(monkeypatch, capsys, tmp_path):
    code, records, err = infill(monkeypatch, capsys, tmp_path / "missing", ['{"id": 1}'])
    assert code == 1 and records == [] and err.count("\n") == 1 and "missing" in err


def test_usage_errors_exit_2(capsys):
    assert main(["infill"]) == 2
    assert main(["fill"]) == 2
    assert main(["infill", "--jsonl", "--batch-size", "x"]) == 2
    err = capsys.readouterr().err
    assert all(line.startswith("sfumato: ") for line in err.splitlines())


def test_fill_replaces_every_gap(capsys, tmp_path, tiny_model_dir):
    template = tmp_path / "t.py"
    template.write_text("name = '[MASK:4]'\n# 中文 [MASK]\nvalue = [MASK:2]\n", encoding="utf-8")
    before = template.read_bytes()
    out = tmp_path / "out.py"
    assert main(["fill", str(template), "-o", str(out), "--model", str(tiny_model_dir), "--seed", "3", "--gap-tokens", "5"]) == 0
    filled = out.read_text(encoding="utf-8")
    assert "[MASK" not in filled
    assert filled.startswith("name = '") and "# 中文 " in filled and "\nvalue = " in filled
    assert template.read_bytes() == before


def test_options_before_the_command_are_the_commands_own(capsys, tmp_path, tiny_model_dir):
    template = tmp_path / "t.txt"
    template.write_text("a [MASK:3] b\n", encoding="utf-8")
    after, before = tmp_path / "after.txt", tmp_path / "before.txt"
    assert main(["fill", str(template), "-o", str(after), "--model", str(tiny_model_dir), "--seed", "2"]) == 0
    assert main(["--model", str(tiny_model_dir), "--device", "cpu", "fill", str(template), "-o", str(before),
                 "--seed", "2"]) == 0
    assert before.read_text(encoding="utf-8") == after.read_text(encoding="utf-8")
    assert "[MASK" not in before.read_text(encoding="utf-8")


def test_a_word_is_a_command_only_where_a_file_would_come_first():
    assert split_command(["--model", "m", "infill", "--jsonl"]) == ("infill", ["--model", "m", "--jsonl"])
    assert split_command(["--model", "fill", "notes.txt"]) == (None, ["--model", "fill", "notes.txt"])
    assert split_command(["notes.txt", "fill"]) == (None, ["notes.txt", "fill"])
    assert split_command(["--", "fill"]) == (None, ["--", "fill"])


def test_fill_without_gaps_passes_the_text_through(capsys, tmp_path):
    template = tmp_path / "plain.txt"
    template.write_text("nothing to fill\n")
    assert main(["fill", str(template), "--model", "never-loaded"]) == 0
    out, err = capsys.readouterr()
    assert out == "nothing to fill\n" and "no [MASK] gaps" in err


def test_fill_never_overwrites_its_input_unless_asked(capsys, tmp_path, tiny_model_dir):
    template = tmp_path / "t.txt"
    template.write_text("a [MASK:2] b")
    assert main(["fill", str(template), "-o", str(template), "--model", str(tiny_model_dir)]) == 2
    assert template.read_text() == "a [MASK:2] b"
    assert main(["fill", str(template), "--in-place", "--model", str(tiny_model_dir), "--seed", "1"]) == 0
    assert "[MASK" not in template.read_text()


def test_fill_rejects_bad_templates(capsys, tmp_path):
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage[MASK]")
    assert main(["fill", str(binary)]) == 1
    zero = tmp_path / "z.txt"
    zero.write_text("x [MASK:0] y")
    assert main(["fill", str(zero)]) == 1
    huge = tmp_path / "h.txt"
    huge.write_text("x [MASK:99999] y")
    assert main(["fill", str(huge)]) == 1
    assert main(["fill", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 4


def test_runtime_error_is_one_line_without_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "sfumato.app.cli", "fill", str(tmp_path / "missing.txt")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_idle_openmp_threads_sleep_soon_unless_the_user_chose_a_spin():
    """Set before torch is imported: the default spin made a 2-thread engine beside one busy core 20x slower."""
    from sfumato.app.cli import quiet_idle_threads

    environ = {}
    quiet_idle_threads(environ)
    assert int(environ["GOMP_SPINCOUNT"]) <= 10_000
    mine = {"GOMP_SPINCOUNT": "INFINITY"}
    quiet_idle_threads(mine)
    assert mine["GOMP_SPINCOUNT"] == "INFINITY"
