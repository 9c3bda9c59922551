"""The engine's batch over one KV cache: a row sees only its own cached keys, its positions go on after them."""

import torch

from sfumato.model.lm_cached_keys import CachedKeys

PAD = 0


def test_left_padded_prompts_never_read_their_padding_and_count_positions_from_their_own_start():
    keys = CachedKeys(PAD)
    keys.start([[5, 6, 7], [8]])
    ids, mask, positions = keys.padded_prompts([[5, 6, 7], [8]])
    assert ids.tolist() == [[5, 6, 7], [PAD, PAD, 8]]
    assert mask[1, 0, 2].tolist() == [False, False, True]  # the short prompt's token reads only itself
    assert mask[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]]  # causal
    assert positions[0].tolist() == [0, 1, 2] and positions[1, 2] == 0
    assert keys.positions(0, 2).tolist() == [[3, 4], [1, 2]]


def test_tails_of_different_widths_see_their_own_row_and_padding_sees_only_itself():
    keys = CachedKeys(PAD)
    keys.start([[5, 6], [7]])
    ids, widths = keys.tails([[1, 2, 3], [4]])
    assert ids.tolist() == [[1, 2, 3], [4, PAD, PAD]] and widths == [3, 1]
    mask = keys.tail_mask(widths, 3, [[True, True, True], [False]])
    assert mask[0, 0, :, :2].all() and mask[1, 0, :, :2].tolist() == [[False, True]] * 3  # the pad key unseen
    assert mask[0, 0, 0, 2:].tolist() == [True, False, False]  # a causal query reads up to itself
    assert mask[1, 0, 1, 2:].tolist() == [False, True, False]  # a padding query reads only itself
    keys.add_widths(widths)
    assert keys.width == 5 and keys.positions(0, 1).tolist() == [[5], [2]]
    assert keys.positions_after(2, torch.tensor([[0], [0]])).tolist() == [[2], [1]]  # the prompts' keys only
