"""A heavy rewrite (strength 0.5 or more) writes whole lines again, as Ctrl+K writes a line.

Renoising the selection's least likely tokens and denoising them in place left fragments of the
old text between new tokens (``("Requ--Dist", True)``): a masked span has the old length, and a
new line rarely fits it. So the ``strength`` fraction of the selection's lines that the model
reads as least likely (mean log-probability of their tokens, read left to right after the prompt)
are written again, one after another, each as a one-line infill with the lines before it (as
rewritten) above and the lines after it (as they were) below; the other lines, the line breaks
and the indentation stay exactly as they were. A written line that leaves its block for good
(``ends_block``: ``return [x * 2 for x in items]`` written over a loop's first line) drops the
selection's lines after it in that block (``unreachable_cut``): kept, they would never run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import takewhile

import torch

from sfumato.model.gap_scope import indentation
from sfumato.model.log_probs import block_positions, target_log_probs
from sfumato.model.rewrite_effect import lines_to_write
from sfumato.model.rewrite_parts import split_selection

LEAVES_BLOCK = re.compile(r"(?:return|raise|throw)\b")
CONDITIONAL = re.compile(r"\b(?:if|unless)\b")  # Ruby's and Perl's ``return if done``
COMMENT = re.compile(r"\s*(#|//|/\*|--)")
DEFINES = re.compile(r"\s*(?:(?:async|export|pub|static|public|private)\s+)*(?:def|class|function|fn|func)\s+(\w+)")
# a statement its next line continues: an operator, or a keyword that needs more
GOES_ON = re.compile(r"(?:\b(?:and|or|not|in|is|if|elif|while|for|with|def|class|from|import|as|lambda)|[-+*/%&|^=<>,\\])\s*$")
DECORATOR = re.compile(r"\s*(@)\w")
NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")
READ_NAME = re.compile(NAME.pattern + r"\b(?!\s*=[^=])")  # not a keyword argument's name
KEYWORDS = {"in", "not", "and", "or", "is", "if", "else", "for", "lambda", "None", "True", "False"}
AS_NAME = re.compile(r"\bas\s+([A-Za-z_]\w*)")
PARAMETER = re.compile(r"[(,]\s*(\*{0,2}[A-Za-z_]\w*)")  # with its stars
FOR_TARGETS = re.compile(r"\s*(?:async\s+)?for\s+(.+?)\s+in\b")
ASSIGNED = re.compile(r"\s*([\w\s,*]+?)\s*(?::[^=]*)?(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)")
NESTED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}")  # an innermost bracket and what it holds
IMPORTED = re.compile(r"\s*(?:from\s+\S+\s+)?import\s+(.+)")
# a statement that assigns plain names (Python's, or a JavaScript declaration's), up to its ``=``
ASSIGNS = re.compile(r"\s*(?:(?:const|let|var)\s+)?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::[^=]*)?=(?!=)")
COMPREHENSION_TARGETS = re.compile(r"\bfor\s+(.+?)\s+in\b")


def read_log_probs(model, prompt_logits: torch.Tensor, cache, held: int, ids: list[int]) -> list[float]:
    """log p of each of ``ids`` read left to right after a prompt of ``held`` tokens (its logits
    [1, V] and a private copy of its ``cache``, which this extends)."""
    device, n = prompt_logits.device, len(ids)
    mask = torch.ones(1, 1, n, held + n, dtype=torch.bool, device=device)
    mask[:, :, :, held:] = torch.tril(mask[0, 0, :, held:])
    hidden = model.model(input_ids=torch.tensor([ids], device=device), attention_mask=mask, cache=cache,
                         position_ids=torch.arange(held, held + n, device=device)[None]).last_hidden_state[0]
    first = prompt_logits[0].float().log_softmax(-1)[ids[0]].item()  # position i predicts token i + 1:
    return [first] + target_log_probs(hidden[: n - 1], model.lm_head, ids[1:], block_positions(prompt_logits.shape[-1])).tolist()


def selection_lines(text: str) -> list[tuple[str, str]]:
    """``text`` as (line, break) pairs that join back to it; a break holds the line break, any
    blank lines and the next line's indentation."""
    return split_selection(text, lambda _: 1, budget=0)


def line_means(lines: list[tuple[str, str]], token_bytes: list[int], log_probs: list[float], heal: int) -> list[float]:
    """Each line's mean token log-probability. ``token_bytes``: the byte length of each token of
    the healed text + selection, ``heal``: the healed text's bytes; a token counts for the line
    its last byte is in (``\\n    return`` for ``return``'s line), none for a break."""
    spans, at = [], 0
    for line, brk in lines:
        size = len(line.encode("utf-8"))
        spans.append((at, at + size))
        at += size + len(brk.encode("utf-8"))
    sums, counts = [0.0] * len(lines), [0] * len(lines)
    end = -heal
    for size, log_p in zip(token_bytes, log_probs):
        end += size
        for k, (start, stop) in enumerate(spans):
            if start < end <= stop:
                sums[k] += log_p
                counts[k] += 1
                break
    return [s / c if c else 0.0 for s, c in zip(sums, counts)]


def chosen_lines(lines: list[tuple[str, str]], read_means: Callable[[], list[float]], strength: float) -> list[int]:
    """The ``strength`` fraction of the lines with text (at least one) that read least likely, in
    order, taken among the lines that stand alone (``standalone_lines``) while there are any.
    ``read_means`` (each line's mean log-probability: a forward pass over the prompt and the
    selection) is called only when some of those lines are left as they are: at strength 1 all are
    written, and a single line always is."""
    written = [k for k, (line, _) in enumerate(lines) if line.strip()]
    alone = [k for k, whole in zip(written, standalone_lines([lines[k] for k in written])) if whole] or written
    count = min(len(alone), lines_to_write(strength, len(written)))
    if count == len(alone):
        return alone
    return sorted(sorted(alone, key=read_means().__getitem__)[:count])


def standalone_lines(lines: list[tuple[str, str]]) -> list[bool]:
    """Whether each line begins and ends outside every bracket (brackets counted outside quotes and
    before a ``#`` comment). A line that opens a bracket a later line closes, or
    sits inside one, is part of a longer statement: written again alone, as a one-line infill, it
    broke the statement (``from x import (a, b,`` became a plain import above ``c)``)."""
    depths = _depths([line for line, _ in lines])
    return [start == 0 and depth == 0 for start, depth in zip([0, *depths], depths)]


def _depths(lines: list[str]) -> list[int]:
    """The bracket depth after each of ``lines`` (in order), never below nothing open."""
    depths, depth = [], 0
    for line in lines:
        depth = max(0, depth + _bracket_change(line))
        depths.append(depth)
    return depths


def _bracket_change(line: str) -> int:
    return ([0] + [depth for _, depth, _ in _scan(line)])[-1]


def _outside_brackets(line: str) -> str:
    """The characters of ``line`` outside brackets, quotes and a ``#`` comment."""
    return "".join(char for char, depth, quoted in _scan(line) if depth == 0 and not quoted)


def _scan(line: str) -> Iterator[tuple[str, int, bool]]:
    """(character, bracket depth after it, whether it is quoted) for ``line`` up to a ``#``
    comment: brackets count outside quotes only, an escaped quote does not end its string."""
    depth, quote, escaped = 0, None, False
    for char in line:
        if quote:
            escaped, quote = char == "\\" and not escaped, None if char == quote and not escaped else quote
        elif char in "\"'`":
            quote = char
        elif char == "#":
            return
        else:
            depth += (char in "([{") - (char in ")]}")
            yield char, depth, False
            continue
        yield char, depth, True


def rewrite_plan(lines: list[tuple[str, str]], chosen: list[int]) -> tuple[str, list[tuple[str, str]]]:
    """(the text before the first chosen line, kept as it is; the chosen lines, each with the text
    after it up to the next chosen line, kept as it is)."""
    lead = "".join(line + brk for line, brk in lines[: chosen[0]])
    plan = []
    for i, k in enumerate(chosen):
        until = chosen[i + 1] if i + 1 < len(chosen) else len(lines)
        plan.append((lines[k][0], lines[k][1] + "".join(line + brk for line, brk in lines[k + 1 : until])))
    return lead, plan


def fits_its_place(written: str, original: str, prefix: str, suffix: str, selection_rest: int | None = None) -> bool:
    """Whether a line written over ``original`` (after ``prefix``, before ``suffix``) keeps the
    structure the original held: it opens or closes as many brackets; it holds as many double
    quotes but for an even number (a lone ``\"\"\"`` opens a string the next lines would sit in); it
    ends as a statement going on (``if a and``), or is a comment, only where the original did or
    was (code written as a comment is a line gone, a comment written as code one made up), and a
    comment keeps its marker; a definition keeps its name (``def tocsv`` is not renamed ``def
    __eq__``), a decorator stays one and none is made; a line opening a block over one that does
    keeps its first word; it is no copy of the nearest line with text above or below it, and no call
    of its own definition with that definition's parameters (``return doubled(items)`` in
    ``doubled``'s body never returns) where the original was neither; it binds
    the names the original bound that the lines below it in its block read (unless it leaves the
    block); it leaves the block where the original did not only when no line of the block follows
    the selection (``selection_rest``: how much of ``suffix`` the selection holds; the lines after
    it are the user's, not to be left unreachable: ``low = [...]`` written as ``return [...]`` above
    ``low.sort()``); and where the original opens a block exactly
    when the next line with text is indented deeper, it does the same (``if found:`` above a line
    as deep is no code) or leaves the block (``unreachable_cut`` drops the deeper lines)."""
    if _bracket_change(written) != _bracket_change(original) or _quotes(written) % 2 != _quotes(original) % 2:
        return False
    if GOES_ON.search(_outside_brackets(written)) and not GOES_ON.search(_outside_brackets(original)):
        return False
    if any(_mark(pattern, written) != _mark(pattern, original) for pattern in (COMMENT, DEFINES, DECORATOR)):
        return False
    if _opens_block(written) and _opens_block(original) and _first_word(written) != _first_word(original):
        return False  # ``try:`` written as ``if found:`` leaves its ``finally:`` without it
    start = prefix.rsplit("\n", 1)[-1]  # the line's indentation, unless the selection holds it
    following = [line for line in suffix.split("\n")[1:] if line.strip()]
    above = prefix.split("\n")[:-1]
    if _copies_a_neighbour(written, original, above, following):
        return False
    if (calls := _calls_itself(above, indentation(start))) and calls.search(written) and not calls.search(original):
        return False
    leaves = ends_block(start + written)
    if leaves and selection_rest is not None and not ends_block(start + original):
        selected = [line for line in suffix[:selection_rest].split("\n")[1:] if line.strip()]
        if len(_block_below(following, indentation(start))) > len(_block_below(selected, indentation(start))):
            return False
    below = [] if leaves else _block_below(following, indentation(start))  # none runs after a return
    if not _binds(original) & _read_in(below) <= _binds(written):
        return False  # ``found = [...]`` written as a docstring leaves ``return sorted(found)`` reading nothing
    deeper = bool(following) and indentation(following[0]) > indentation(start + original)
    return _opens_block(original) != deeper or _opens_block(written) == deeper or deeper and ends_block(start + written)


def reads_its_own_target(written: str, prefix: str, suffix: str) -> bool:
    """Whether ``written`` (between ``prefix`` and ``suffix``) reads, right of its statement's ``=``,
    a name that statement assigns and no line above binds: ``const doubled = numbers.map(doubled)``
    and ``count = len(count)`` compute nothing (JavaScript's temporal dead zone, Python's NameError).
    A line inside an open bracket (``name=name,`` a call's keyword argument) assigns nothing."""
    *above, start = prefix.split("\n")
    first, *more = written.split("\n", 1)
    statement = start + first + ("" if more else suffix.split("\n", 1)[0])
    code = "".join(" " if quoted else char for char, _, quoted in _scan(statement))
    depths = _depths(above)
    if not (m := ASSIGNS.match(code)) or depths and depths[-1]:
        return False
    targets = set(NAME.findall(m.group(1))) - {"const", "let", "var"}
    targets -= {name for found in COMPREHENSION_TARGETS.findall(code) for name in NAME.findall(found)}
    reads = {r.group() for r in READ_NAME.finditer(code, max(m.end(), len(start)), len(start) + len(first))}
    return bool(targets & reads - {name for line in _statements(above, depths) for name in _binds(line)})


def _statements(lines: list[str], depths: list[int]) -> list[str]:
    """``lines`` joined where a bracket stays open across them (``depths``: ``_depths(lines)``): a
    definition whose parameters run over several lines is one statement, as ``_binds`` reads it."""
    statements: list[str] = []
    for line, depth_before in zip(lines, [0, *depths]):
        if depth_before:
            statements[-1] += " " + line.strip()
        else:
            statements.append(line)
    return statements


def _mark(pattern: re.Pattern, line: str) -> str | None:
    """What ``pattern``'s group finds at the line's start: its comment marker, the name it defines."""
    return m.group(1) if (m := pattern.match(line)) else None


def _copies_a_neighbour(written: str, original: str, above: list[str], below: list[str]) -> bool:
    """Whether ``written`` is the nearest line with text above it or below it (``above``: the
    lines before its own, ``below``: those after), where ``original`` was not: a line written as
    a copy of the next (a header's comment lines came back as three ``from __future__ import``)."""
    nearest = [next((line.strip() for line in reversed(above) if line.strip()), None),
               next((line.strip() for line in below if line.strip()), None)]
    return written.strip() in nearest and original.strip() not in nearest


def _calls_itself(above: list[str], indent: int) -> re.Pattern | None:
    """A call of the definition whose body holds a line indented ``indent`` (the nearest definition
    above, indented less) with exactly its own parameters, ``self`` and ``cls`` left out: ``doubled(items)``,
    ``self.walk(node, *args)``; None outside a definition."""
    for line in reversed(above):
        if not line.strip() or indentation(line) >= indent:
            continue
        indent = indentation(line)
        if m := DEFINES.match(line):
            if (parameters := _parameters(line)) is None:
                return None  # a class's body
            arguments = r"\s*,\s*".join(re.escape(name) for name in parameters if name not in ("self", "cls"))
            return re.compile(rf"(?<![\w.])(?:(?:self|cls)\.)?{m.group(1)}\(\s*{arguments}\s*\)")
    return None


def _parameters(line: str) -> list[str] | None:
    """A function definition's parameters, with their stars; None for a class (its bases are no
    parameters) or a line that defines nothing."""
    if not (m := DEFINES.match(line)) or re.search(r"\bclass\s", m.group()):
        return None
    return PARAMETER.findall(_without_nested(line[m.end() :]))


def _binds(line: str) -> set[str]:
    """The names ``line`` binds: an assignment's targets, a ``for``'s, ``as`` names, a definition's
    parameters, imported names (Python's forms; attributes and subscripts bind no name)."""
    names: set[str] = set(AS_NAME.findall(line))
    if DEFINES.match(line):
        names |= {name.lstrip("*") for name in _parameters(line) or []}
    elif m := FOR_TARGETS.match(line) or ASSIGNED.match(_outside_brackets(line)):
        names |= {name for name in NAME.findall(m.group(1)) if name not in KEYWORDS}
    elif m := IMPORTED.match(line):
        names |= {part.split(".")[0] for part in re.split(r"\s*,\s*", m.group(1).strip("() ")) if part and " as " not in part}
    return names


def _without_nested(parameters: str) -> str:
    """A definition's text after its name without what brackets inside its parameter list hold
    (``Dict[str, int]``, ``f(a, b)``), so only the list's own names follow its ``(`` and commas."""
    head, bracket, rest = parameters.partition("(")
    while (shorter := NESTED.sub("", rest)) != rest:
        rest = shorter
    return head + bracket + rest


def _block_below(lines: list[str], indent: int) -> list[str]:
    """Of the lines with text below a line indented ``indent``, those before the first one indented less."""
    return list(takewhile(lambda line: indentation(line) >= indent, lines))


def _read_in(lines: list[str]) -> set[str]:
    return {name for line in lines for name in READ_NAME.findall(line)}


def _first_word(line: str) -> str:
    return (re.findall(r"\w+|\S", line) or [""])[0]


def _opens_block(line: str) -> bool:
    return _outside_brackets(line).rstrip().endswith(":")


def _quotes(line: str) -> int:
    return line.count('"') - line.count('\\"')


def ends_block(line: str) -> bool:
    """Whether ``line`` (with its indentation) leaves its block for good: an indented return, raise
    or throw whose brackets close on the line and that no ``if`` / ``unless`` makes conditional
    (Python's ``return a if b else c`` is not); a line of prose is not indented so."""
    text = line.lstrip(" \t").rstrip()
    if text == line.rstrip() or not LEAVES_BLOCK.match(text) or text.endswith("\\") or _bracket_change(text):
        return False
    outside = _outside_brackets(text)  # a comprehension's ``if`` is no condition on the return
    return not CONDITIONAL.search(outside) or " else " in outside


def drop_unreachable(plan: list[tuple[str, str]], index: int, indent: str) -> list[tuple[str, str]] | None:
    """``plan`` (``rewrite_plan``'s parts) without the selection's lines after part ``index`` that
    sit in its block, the part's line written as one that leaves it (``ends_block``, indented
    ``indent``): the lines indented ``indent`` or deeper up to the first line indented less (blank
    lines between them go too; those before it stay). Chosen lines among them are not written."""
    rest = [plan[index][1]] + [line + after for line, after in plan[index + 1 :]]
    first, *lines = "".join(rest).split("\n")
    end = at = 0
    for line in lines:
        at += 1 + len(line)
        if line.strip():
            if not line.startswith(indent):
                break
            end = at
    if first or not end:
        return None
    start = 0  # of part k's kept text, in the selection's rest
    for k in range(index, len(plan)):
        start += len(rest[k - index]) - len(plan[k][1])
        if end <= start + len(plan[k][1]):
            return [*plan[:index], (plan[index][0], plan[k][1][end - start :]), *plan[k + 1 :]]
        start += len(plan[k][1])
    return None


def unreachable_cut(plan: list[tuple[str, str]], index: int, texts: list[str]) -> list[tuple[str, str]] | None:
    """``plan`` without the lines that part ``index``'s written line made unreachable, when every
    alternative's line (the last line of each of ``texts``: the text up to its end, from at least
    the start of the selection's first line) leaves its block; None when nothing is dropped."""
    lines = [text.rsplit("\n", 1)[-1] for text in texts]
    if not all(map(ends_block, lines)):
        return None
    return drop_unreachable(plan, index, lines[0][: indentation(lines[0])])
