"""Training examples through the model many at once: one padded batch, each example with its own
attention mask and its own loss.

``collate`` lays the examples out as tensors (in a data-loading worker, off the GPU's path);
``batch_loss`` is the mean of the examples' losses from one forward pass over them all. An
example's loss: cross-entropy at its weighted canvas positions, plus half a next-token loss on the
last ``AR_TOKENS`` of its prompt, plus, with ``distill``, that weight times the KL divergence from
the base's own next-token distribution (the adapter off, reading the prefix and the true middle
left to right) at its masked canvas positions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from sfumato.model.lm_layout import SpecialIds, canvas_mask

AR_TOKENS = 32  # prompt positions that also get the next-token loss


def teacher_reading(example, special: SpecialIds) -> tuple[list[int], int, list[int]] | None:
    """What the base reads to teach an example: (prefix + the middle's tokens up to its first end,
    where the middle starts in them, the masked canvas positions it predicts); None when none is
    masked there. A slip's target is the true middle up to its first end, so it aligns too."""
    ids, prompt_len, target = example.ids, example.prompt_len, example.target
    prefix = ids[ids.index(special.prefix_mark) + 1 : prompt_len]
    middle = target[: target.index(special.end)] if special.end in target else target
    positions = [j for j in range(len(middle)) if ids[prompt_len + j] == special.mask]
    if not prefix or not positions:
        return None
    return special.opening + prefix + middle, len(special.opening) + len(prefix), positions


def _padded(rows: list[list[int]], pad: int) -> torch.Tensor:
    return pad_sequence([torch.tensor(row) for row in rows], batch_first=True, padding_value=pad)


def collate(examples, special: SpecialIds, distill: bool = False) -> dict[str, torch.Tensor]:
    """The examples as tensors: ``ids`` [B, L] padded, ``mask`` [B, 1, L, L] (a padding position
    sees only itself), and flat lists of the positions that take a loss, each with its example."""
    ids = _padded([e.ids for e in examples], special.mask)
    length = ids.shape[1]
    mask = torch.zeros(len(examples), 1, length, length, dtype=torch.bool)
    mask[:, 0] = torch.eye(length, dtype=torch.bool)
    canvas = {"row": [], "at": [], "target": [], "weight": []}
    ar = {"row": [], "at": [], "target": []}
    teach = {"ids": [], "row": [], "at": [], "student": []}
    for b, e in enumerate(examples):
        n, p = len(e.ids), e.prompt_len
        shown = None if e.both_ways else [token != special.mask for token in e.ids[p:]]
        mask[b, 0, :n, :n] = canvas_mask(p, len(e.target), shown=shown)[0, 0]
        first = len(canvas["at"])
        # logits at i-1 predict token i: the canvas is predicted from positions P-1 .. P+C-2
        canvas["row"] += [b] * len(e.target)
        canvas["at"] += range(p - 1, p - 1 + len(e.target))
        canvas["target"] += e.target
        canvas["weight"] += e.weight
        ar_from = max(2 + (special.start is not None), p - AR_TOKENS)  # skip the suffix marker's position
        if p - ar_from >= 2:
            ar["row"] += [b] * (p - ar_from)
            ar["at"] += range(ar_from - 1, p - 1)
            ar["target"] += e.ids[ar_from:p]
        reading = teacher_reading(e, special) if distill else None
        if reading is not None:
            teacher_ids, start, positions = reading
            teach["row"] += [b] * len(positions)
            teach["at"] += [(len(teach["ids"]), start - 1 + j) for j in positions]
            teach["student"] += [first + j for j in positions]
            teach["ids"].append(teacher_ids)
    batch = {"ids": ids, "mask": mask, "tokens": torch.tensor(sum(len(e.ids) for e in examples)), **{f"canvas_{k}": torch.tensor(v) for k, v in canvas.items()},
             **{f"ar_{k}": torch.tensor(v, dtype=torch.long) for k, v in ar.items()}}
    if teach["ids"]:
        batch["teacher_ids"] = _padded(teach["ids"], special.mask)  # padded at the end: a causal reading never sees it
        batch["teach_row"] = torch.tensor(teach["row"])
        batch["teach_at"] = torch.tensor(teach["at"])
        batch["teach_student"] = torch.tensor(teach["student"])
    return batch


def _per_example(values: torch.Tensor, rows: torch.Tensor, size: int) -> torch.Tensor:
    return torch.zeros(size, device=values.device, dtype=values.dtype).index_add_(0, rows, values)


def batch_loss(model, batch: dict[str, torch.Tensor], distill: float = 0.0) -> torch.Tensor:
    """The mean over the batch's examples of each one's loss; ``model`` a peft model whose adapter
    is the student (with ``distill``, the same model with the adapter off is the teacher)."""
    size = batch["ids"].shape[0]
    inner, head = model.base_model.model.model, model.base_model.model.lm_head
    hidden = inner(input_ids=batch["ids"], attention_mask=batch["mask"]).last_hidden_state
    logits = head(hidden[batch["canvas_row"], batch["canvas_at"]]).float()
    weight = batch["canvas_weight"].float()
    ce = F.cross_entropy(logits, batch["canvas_target"], reduction="none")
    loss = _per_example(ce * weight, batch["canvas_row"], size) / _per_example(weight, batch["canvas_row"], size)
    if len(batch["ar_at"]):
        ar_ce = F.cross_entropy(head(hidden[batch["ar_row"], batch["ar_at"]]).float(), batch["ar_target"], reduction="none")
        counts = _per_example(torch.ones_like(ar_ce), batch["ar_row"], size)
        loss = loss + 0.5 * _per_example(ar_ce, batch["ar_row"], size) / counts.clamp(min=1)
    if distill and "teacher_ids" in batch:
        with torch.no_grad(), model.disable_adapter():
            read = inner(input_ids=batch["teacher_ids"]).last_hidden_state
            taught = head(read[batch["teach_at"][:, 0], batch["teach_at"][:, 1]]).float().log_softmax(-1)
        student = logits[batch["teach_student"]].log_softmax(-1)
        kl = (taught.exp() * (taught - student)).sum(-1)
        rows = batch["teach_row"]
        counts = _per_example(torch.ones_like(kl), rows, size)
        loss = loss + distill * _per_example(kl, rows, size) / counts.clamp(min=1)
    return loss.mean()
