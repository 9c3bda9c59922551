"""The ``sfumato`` command: the editor, and headless commands for scripts and evaluation.

    sfumato [FILE...]                      open the editor
    sfumato infill --jsonl [< requests]    JSON Lines in, one JSON line out per request, in order
    sfumato fill TEMPLATE [-o OUT]         fill every [MASK] / [MASK:n] gap of a template
    sfumato bench [--json]                 performance figures

Exit codes: 0 success, 1 runtime error, 2 usage error; errors are one line on stderr. Standard
output is always UTF-8; no control, bidi or zero-width character reaches a terminal unescaped
(``sfumato.model.untrusted_text``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from sfumato.app.arguments import ArgumentParser, UsageError, hardware_options
from sfumato.model.api import EngineError, InfillRequest, TemplateRequest
from sfumato.model.template import apply_fills, find_gaps, segments_of, within_its_line
from sfumato.model.untrusted_text import invisible_report, terminal_safe

VERSION = metadata.version("sfumato")  # pyproject.toml's, as installed
COMMANDS = ("infill", "fill", "bench")
MAX_NEW_TOKENS = 4096  # per JSONL request; a larger number would keep the model busy for hours
MAX_LINE_BYTES = 16 << 20  # one JSONL request (its line end included)
MAX_INPUT_BYTES = 64 << 20  # all of them: the editor's own file limit (sfumato.app.fileio.MAX_FILE_BYTES)


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="embedded", help="embedded | a model folder | a hub id | http(s)://host:port/v1")
    parser.add_argument("--remote-model", default=None, help="with a server URL: the served model (default: its first)")
    hardware_options(parser)
    parser.add_argument("--steps", type=int, default=None, help="denoising passes per canvas")
    parser.add_argument("--seed", type=int, default=None, help="make runs reproducible")
    parser.add_argument("--allow-downloads", action="store_true", help="let a hub id download")


def build_parser() -> dict[str, argparse.ArgumentParser]:
    infill = ArgumentParser(
        prog="sfumato infill", description="Infill requests given as JSON Lines.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"""a request, one JSON object a line:
  id              any JSON value, given back with the answer
  prefix, suffix  the text before and after the gap
  max_new_tokens  at most this many tokens (default 64, at most {MAX_NEW_TOKENS})
  init_text       the text to rewrite (then strength: 0-1, default 1)
  one_line        the rest of one line only; absent: true for a gap with text
                  before or after it on its line, as `fill` treats a [MASK]
  file_name       the document's file name (the model may read its language)

an answer, one line a request, in order:
  {{"id", "text", "forward_passes", "tokens", "seconds", "confident"}}, or {{"id", "error"}}""")
    infill.add_argument("--jsonl", action="store_true", required=True, help="read JSON Lines (the only format)")
    infill.add_argument("input", nargs="?", default="-", help="requests file (default: standard input)")
    infill.add_argument("--batch-size", type=int, default=1,
                        help="requests denoised together (above 1, 'seconds' is the batch's time)")
    _model_options(infill)

    fill = ArgumentParser(prog="sfumato fill", description="Fill every [MASK] / [MASK:n] gap of a template.")
    fill.add_argument("template")
    fill.add_argument("-o", "--output", help="write here instead of standard output")
    fill.add_argument("--in-place", action="store_true", help="overwrite the template itself")
    fill.add_argument("--gap-tokens", type=int, default=32, help="length of a [MASK] without a hint")
    _model_options(fill)

    editor = ArgumentParser(prog="sfumato", description="Sfumato: an editor whose AI edits are made by diffusion.")
    editor.add_argument("files", nargs="*", help="files to open (a folder opens in the sidebar)")
    editor.add_argument("--model", default=None, help="model spec for this run (default: settings)")
    hardware_options(editor, default_device=None)  # for this run; default: settings
    editor.add_argument("--version", action="version", version=f"sfumato {VERSION}")
    return {"infill": infill, "fill": fill, "editor": editor}


OPENMP_SPIN = "10000"  # GOMP_SPINCOUNT: libgomp's default spins 30x longer before a worker thread sleeps


def quiet_idle_threads(environ=os.environ) -> None:
    """Let torch's idle OpenMP threads sleep soon (unless the user chose otherwise); it must run
    before torch is imported. With the default spin, a 2-thread engine beside one busy core (a
    build, a training run) took 16 s for a line instead of 0.8 s; with 10,000 spins 2.7 s, and
    the same 0.8 s on idle cores (``sfumato bench``'s engine figures, docs/performance.md)."""
    environ.setdefault("GOMP_SPINCOUNT", OPENMP_SPIN)


EDITOR_VALUE_OPTIONS = ("--model", "--device", "--quantize")  # the editor's options that take a value


def split_command(argv: list[str]) -> tuple[str | None, list[str]]:
    """The subcommand and its arguments, or None and the editor's.

    The command is the first word that is not an option or an option's value, so options given
    before it (``sfumato --model X fill T``) are its own, as after it; after ``--`` every word
    is a file for the editor.
    """
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            break
        if not word.startswith("-"):
            if word in COMMANDS:
                return word, [*argv[:index], *argv[index + 1:]]
            break
        index += 2 if word in EDITOR_VALUE_OPTIONS else 1
    return None, argv


def main(argv: list[str] | None = None) -> int:
    quiet_idle_threads()
    argv = sys.argv[1:] if argv is None else argv
    parsers = build_parser()
    try:
        command, rest = split_command(argv)
        if command is not None:
            if command == "bench":
                from sfumato.app.bench import main as bench_main

                return bench_main(rest)  # runtime failures below exit 1 like the other commands
            args = parsers[command].parse_args(rest)
            return {"infill": run_infill, "fill": run_fill}[command](args)
        args = parsers["editor"].parse_args(argv)
    except UsageError as error:
        return _fail(2, str(error))
    except OSError as error:
        return _fail(1, f"{error.filename}: {error.strerror}" if error.filename else str(error))
    except (EngineError, ValueError, RuntimeError) as error:
        return _fail(1, str(error))
    except KeyboardInterrupt:
        return _fail(1, "interrupted")
    from sfumato.app.application import run

    run(args.files, args.model, args.device, args.quantize)  # ends the process when the window closes


def _fail(code: int, message: str) -> int:
    _say(message)
    return code


def _say(message: str) -> None:
    """One line on stderr, its controls and invisible characters escaped."""
    print(f"sfumato: {terminal_safe(message)}", file=sys.stderr)


def _write_out(text: str) -> None:
    """``text`` on standard output as UTF-8, whatever the locale says."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()


def _load(args):
    from sfumato.model.load_progress import terminal_bar
    from sfumato.model.loading import load_backend

    engine = load_backend(
        args.model, device=args.device, allow_downloads=args.allow_downloads, remote_model=args.remote_model,
        quantize=args.quantize, progress=terminal_bar(),
    )
    return engine


# ---- infill --jsonl --------------------------------------------------------------------------


def parse_request_line(line: str, steps: int | None, seed: int | None) -> tuple[object, InfillRequest]:
    """(id, request) from one JSON line; ValueError with a readable reason when it is not one."""
    try:
        data = json.loads(line, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error.msg} at column {error.colno})") from None
    except _NotJson as error:
        raise ValueError(f"not valid JSON ({error})") from None
    except RecursionError:
        raise ValueError("not valid JSON (nested too deep)") from None
    except ValueError:  # Python reads integers of at most 4300 digits
        raise ValueError("not valid JSON (a number too large)") from None
    if not isinstance(data, dict):
        raise ValueError("a request must be a JSON object")
    request_id = data.get("id")
    fields = {"prefix": str, "suffix": str, "max_new_tokens": int, "init_text": str, "strength": (int, float),
              "one_line": bool, "file_name": str}
    for key, kind in fields.items():
        if key in data and data[key] is not None and (not isinstance(data[key], kind) or (kind is not bool and isinstance(data[key], bool))):
            raise _WithId(request_id, f"field {key!r} has the wrong type")
    data = {key: value for key, value in data.items() if value is not None}  # a null field is an absent one
    if (data.get("max_new_tokens") or 0) > MAX_NEW_TOKENS:
        raise _WithId(request_id, f"max_new_tokens must be at most {MAX_NEW_TOKENS}")
    try:
        request = InfillRequest(
            prefix=data.get("prefix", ""),
            suffix=data.get("suffix", ""),
            max_new_tokens=data.get("max_new_tokens", 64),
            init_text=data.get("init_text"),
            strength=float(data.get("strength", 1.0)),
            # absent: a gap with text before or after it on its line is one line, as `fill` treats a [MASK]
            one_line=(data["one_line"] if data.get("one_line") is not None
                      else data.get("init_text") is None and within_its_line(data.get("prefix", ""), data.get("suffix", ""))),
            steps=steps,
            seed=seed,
            file_name=data.get("file_name", ""),
        )
    except ValueError as error:
        raise _WithId(request_id, str(error)) from None
    return request_id, request


class _NotJson(ValueError):
    """What Python's JSON reader takes and JSON has not."""


def _refuse_constant(name: str):
    """NaN and Infinity: Python reads them, but an ``id`` holding one would be given back in an
    answer line that no strict JSON reader reads."""
    raise _NotJson("NaN and Infinity are not JSON")


class _WithId(ValueError):
    def __init__(self, request_id, message: str):
        super().__init__(message)
        self.request_id = request_id


def run_infill(args) -> int:
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    from sfumato.app.fileio import open_regular

    with _named(args.input):
        source = sys.stdin.buffer if args.input == "-" else open_regular(args.input)
    with source:
        lines = _input_lines(source)
    parsed = [_parsed_line(line, number, args) for number, line in lines]
    backend = _load(args) if any(request is not None for _, request, _ in parsed) else None
    answered = 0
    for record in _infill_records(backend, parsed, args):
        answered += "error" not in record
        _write_out(terminal_safe(json.dumps(record, ensure_ascii=False)) + "\n")
    if lines and not answered:  # some errors are the run's answer; only errors mean it did not run
        return _fail(1, f"none of the {len(lines)} requests was answered (each output line says why)")
    return 0


@contextmanager
def _named(path: str) -> Iterator[None]:
    """A file the editor would refuse (``NotTextError``) is refused here too, with its name."""
    from sfumato.app.fileio import NotTextError

    try:
        yield
    except NotTextError as error:
        raise EngineError(f"{path}: {error}") from None


def _input_lines(source) -> list[tuple[int, bytes]]:
    """(line number, bytes) for the non-blank lines of ``source``; EngineError for a line over
    ``MAX_LINE_BYTES`` or an input over ``MAX_INPUT_BYTES``, checked as it is read (``/dev/zero``
    or an endless pipe is refused, never read into memory)."""
    lines, total, number = [], 0, 0
    while line := source.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise EngineError(f"a line of the input is longer than {MAX_LINE_BYTES >> 20} MB; stopped reading")
        total += len(line)
        if total > MAX_INPUT_BYTES:
            raise EngineError(f"the input is larger than {MAX_INPUT_BYTES >> 20} MB; stopped reading")
        if line.strip():
            lines.append((number, line))
    return lines


def _parsed_line(line: bytes, number: int, args) -> tuple[object, InfillRequest | None, str | None]:
    """(id, request, None) for a request line, (id, None, why) for a bad one. A line that is not
    UTF-8 is one bad line, its id given when the line, its bad bytes replaced, names one they spare."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        request_id = _parsed_line(line.decode("utf-8", "replace").encode("utf-8"), number, args)[0]
        readable = "\ufffd" not in json.dumps(request_id, ensure_ascii=False)
        return request_id if readable else None, None, f"line {number} is not valid UTF-8 ({error.reason} at byte {error.start} of the line)"
    try:
        request_id, request = parse_request_line(text, args.steps, args.seed)
        return request_id, request, None
    except _WithId as error:
        return error.request_id, None, str(error)
    except ValueError as error:
        return None, None, str(error)


def _infill_records(backend, parsed: list[tuple[object, InfillRequest | None, str | None]], args) -> Iterator[dict]:
    """Output records in input order; valid requests run in batches, bad lines get an error record."""
    for start in range(0, len(parsed), args.batch_size):
        chunk = parsed[start : start + args.batch_size]
        requests = [request for _, request, _ in chunk if request is not None]
        began = time.perf_counter()
        results = _batch_results(backend, requests) if requests else []
        seconds = time.perf_counter() - began
        answers = iter(results)
        for request_id, request, error in chunk:
            if request is None:
                yield {"id": request_id, "error": error}
                continue
            draft = next(answers)
            if isinstance(draft, str):
                yield {"id": request_id, "error": draft}
            else:
                yield {
                    "id": request_id,
                    "text": draft.text,
                    "forward_passes": draft.forward_passes,
                    "tokens": draft.generated_tokens,
                    "seconds": round(seconds, 4),
                    "confident": draft.confident,
                }


def _batch_results(backend, requests: list[InfillRequest]) -> list:
    """Each request's final draft, or its one-line error: a batch that fails runs again one
    request at a time, so one bad answer costs one error line, not the batch's."""
    try:
        return list(_run_to_end(backend.stream(requests)))
    except Exception as error:  # a model failure fails a request's line, not the run
        if len(requests) == 1:
            return [str(error).splitlines()[0] if str(error) else type(error).__name__]
    return [result for request in requests for result in _batch_results(backend, [request])]


def _run_to_end(stream: Iterable) -> tuple:
    last = None
    for last in stream:
        pass
    if last is None:
        raise EngineError("the model produced no result")
    return last


# ---- fill TEMPLATE ---------------------------------------------------------------------------


def run_fill(args) -> int:
    template_path = Path(args.template)
    if template_path.is_dir():
        raise UsageError(f"{args.template} is a folder, not a template file")
    output = Path(args.output) if args.output else None
    if args.in_place:
        if output is not None:
            raise UsageError("give either -o or --in-place, not both")
        output = template_path
    elif output is not None and output.exists() and output.resolve() == template_path.resolve():
        raise UsageError("-o names the template itself; add --in-place to overwrite it")
    from sfumato.app.fileio import read_bounded

    with _named(args.template):
        data = read_bounded(args.template)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EngineError(f"{args.template} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    gaps = find_gaps(text, default_tokens=args.gap_tokens)
    if not gaps:
        _say("the template has no [MASK] gaps; nothing to fill")
        filled = text
    else:
        template = TemplateRequest(segments_of(text, gaps), tuple(g.max_new_tokens for g in gaps), args.steps, args.seed,
                                   file_name=template_path.name)
        fills = [draft.text for draft in _run_to_end(_load(args).stream_template(template))]
        filled = apply_fills(text, gaps, fills)
        report = invisible_report("".join(fills))
        if report:
            _say(f"the model wrote {report}; they are in the output")
    if output is None:
        _write_out(terminal_safe(filled, keep_lines=True) if sys.stdout.isatty() else filled)
    else:
        from sfumato.app.fileio import write_atomic

        write_atomic(str(output), filled.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
