"""A heavy rewrite (strength 0.5 or more) writes whole lines again, as Ctrl+K writes a line.

Renoising the selection's least likely tokens and denoising them in place left fragments of the
old text between new tokens (``("Requ--Dist", True)``): a masked span has the old length, and a
new line rarely fits it. So the ``strength`` fraction of the selection's lines that the model
reads as least likely (mean log-probability of their tokens, read left to right after the prompt)
are written again, one after another, each as a one-line infill with the lines before it (as
rewritten) above and the lines after it (as they were) below; the other lines, the line breaks
and the indentation stay exactly as they were.
"""

from __future__ import annotations

import torch

from sfumato.model.log_probs import block_positions, target_log_probs
from sfumato.model.rewrite_effect import lines_to_write
from sfumato.model.rewrite_parts import split_selection


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


def chosen_lines(lines: list[tuple[str, str]], means: list[float], strength: float) -> list[int]:
    """The ``strength`` fraction of the lines with text (at least one) that read least likely, in
    order, taken among the lines that stand alone (``standalone_lines``) while there are any."""
    written = [k for k, (line, _) in enumerate(lines) if line.strip()]
    alone = [k for k, whole in zip(written, standalone_lines([lines[k] for k in written])) if whole] or written
    count = min(len(alone), lines_to_write(strength, len(written)))
    return sorted(sorted(alone, key=means.__getitem__)[:count])


def standalone_lines(lines: list[tuple[str, str]]) -> list[bool]:
    """Whether each line begins and ends outside every bracket (brackets counted outside quotes and
    before a ``#`` comment). A line that opens a bracket a later line closes, or
    sits inside one, is part of a longer statement: written again alone, as a one-line infill, it
    broke the statement (``from x import (a, b,`` became a plain import above ``c)``)."""
    depth, alone = 0, []
    for line, _ in lines:
        start = depth
        depth = max(0, depth + _bracket_change(line))
        alone.append(start == 0 and depth == 0)
    return alone


def _bracket_change(line: str) -> int:
    change, quote, escaped = 0, None, False
    for char in line:
        if quote:
            escaped, quote = char == "\\" and not escaped, None if char == quote and not escaped else quote
        elif char in "\"'`":
            quote = char
        elif char == "#":
            break
        elif char in "([{":
            change += 1
        elif char in ")]}":
            change -= 1
    return change


def rewrite_plan(lines: list[tuple[str, str]], chosen: list[int]) -> tuple[str, list[tuple[str, str]]]:
    """(the text before the first chosen line, kept as it is; the chosen lines, each with the text
    after it up to the next chosen line, kept as it is)."""
    lead = "".join(line + brk for line, brk in lines[: chosen[0]])
    plan = []
    for i, k in enumerate(chosen):
        until = chosen[i + 1] if i + 1 < len(chosen) else len(lines)
        plan.append((lines[k][0], lines[k][1] + "".join(line + brk for line, brk in lines[k + 1 : until])))
    return lead, plan
