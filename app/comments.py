"""Line comments: each language's marker, and commenting or uncommenting a run of lines.

Pygments knows how to colour a comment but not how to write one, so the markers are a table
keyed by pygments' lexer aliases. A language with only block comments (HTML, CSS) wraps each
line in its own pair.
"""

from __future__ import annotations

from collections.abc import Iterable

Marker = tuple[str, str]  # what opens and what closes a one-line comment ("" for a line comment)

_MARKERS: dict[Marker, list[str]] = {
    ("#", ""): "python py cython sage bash sh ksh zsh fish ruby rb perl pl yaml yml toml ini cfg make "
               "makefile docker dockerfile cmake powershell pwsh nix nixos terraform tf hcl r s splus "
               "julia jl elixir ex exs crystal cr nim nimrod gdscript gd tcl awk gawk sed properties "
               "coffeescript coffee graphql restructuredtext rst rest gas asm".split(),
    ("//", ""): "c cpp c++ objective-c objc java javascript js typescript ts jsx tsx go golang rust rs "
                "kotlin swift csharp c# cs php scala dart groovy zig d solidity scss less protobuf "
                "proto verilog v systemverilog sv glsl hlsl cuda fsharp f# odin delphi pas pascal".split(),
    ("--", ""): "sql tsql t-sql mysql postgresql psql plpgsql sqlite3 lua haskell hs elm ada vhdl".split(),
    (";", ""): "common-lisp cl lisp clojure clj scheme scm racket rkt emacs-lisp elisp nasm".split(),
    ("%", ""): "tex latex matlab erlang prolog".split(),
    ("'", ""): "vb.net vbnet".split(),
    ("!", ""): "fortran f90".split(),
    ("REM", ""): "batch bat dosbatch".split(),
    ('"', ""): "vim".split(),
    ("\\", ""): "forth".split(),
    ("<!--", "-->"): "html xml markdown md vue svg".split(),
    ("/*", "*/"): "css".split(),
    ("(*", "*)"): "ocaml".split(),
}
_MARKER_OF_ALIAS = {alias: marker for marker, aliases in _MARKERS.items() for alias in aliases}


def line_comment_marker(aliases: Iterable[str]) -> Marker | None:
    """The one-line comment of the language with these pygments aliases; None when it has none."""
    return next((_MARKER_OF_ALIAS[alias] for alias in aliases if alias in _MARKER_OF_ALIAS), None)


def toggle_line_comments(lines: list[str], marker: Marker) -> list[str]:
    """Comment ``lines`` out, or, when every non-blank one is already commented, uncomment them.

    Commenting puts the opening marker and a space at the smallest indentation of the non-blank
    lines, so the block keeps its shape (and a space and the closing marker at each line's end);
    uncommenting removes them again with one space each. Blank lines are left as they are.
    """
    opening, closing = marker
    filled = [line for line in lines if line.strip()]
    if not filled:
        return lines
    if all(_is_commented(line, marker) for line in filled):
        return [_uncomment(line, marker) if line.strip() else line for line in lines]
    column = min(len(line) - len(line.lstrip()) for line in filled)
    suffix = " " + closing if closing else ""
    return [line[:column] + opening + " " + line[column:] + suffix if line.strip() else line for line in lines]


def _is_commented(line: str, marker: Marker) -> bool:
    opening, closing = marker
    text = line.strip()
    return text.startswith(opening) and text.endswith(closing) and len(text) >= len(opening) + len(closing)


def _uncomment(line: str, marker: Marker) -> str:
    opening, closing = marker
    start = len(line) - len(line.lstrip())
    end = start + len(opening)
    if line[end : end + 1] == " ":
        end += 1
    body = line[end:]
    if closing:
        stripped = body.rstrip()
        trailing = body[len(stripped):]
        body = stripped[: len(stripped) - len(closing)]
        body = (body[:-1] if body.endswith(" ") else body) + trailing
    return line[:start] + body
