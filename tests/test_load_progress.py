"""Loading reports tensors read / total and stops at the next tensor once cancelled."""

from __future__ import annotations

import pytest

from sfumato.model.api import CancelFlag, Cancelled
from sfumato.model.loading import load_backend


def test_loading_reports_every_tensor_up_to_the_total(tiny_model_dir):
    heard: list[tuple[int, int]] = []
    load_backend(str(tiny_model_dir), device="cpu", progress=lambda done, total: heard.append((done, total)))
    totals = {total for _, total in heard}
    assert len(totals) == 1 and totals.pop() > 10
    done = [d for d, _ in heard]
    assert done == sorted(done) and done[0] == 0 and done[-1] == heard[-1][1]


def test_a_cancelled_load_stops_within_a_tensor_and_leaves_the_hook_as_it_was(tiny_model_dir):
    from transformers.utils import logging as transformers_logging

    cancel = CancelFlag()
    heard: list[int] = []

    def report(done: int, total: int) -> None:
        heard.append(done)
        if done == 3:
            cancel.set()

    with pytest.raises(Cancelled):
        load_backend(str(tiny_model_dir), device="cpu", progress=report, cancel=cancel)
    assert heard[-1] == 3
    previous = transformers_logging.set_tqdm_hook(None)
    assert previous is None  # the hook is put back after a cancelled load too


def test_a_later_load_is_not_watched(tiny_model_dir):
    heard = []
    load_backend(str(tiny_model_dir), device="cpu", progress=lambda done, total: heard.append(done))
    count = len(heard)
    load_backend(str(tiny_model_dir), device="cpu")
    assert len(heard) == count
