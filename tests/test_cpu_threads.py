"""The CPU engine's thread count follows the cores other programs leave free."""

import pytest
import torch
from sfumato.model.cpu_threads import STALE_S, WINDOW_S, CpuThreads


class Machine:
    """A clock and two CPU-time counters the test advances by hand."""

    def __init__(self):
        self.now = self.system = self.own = 0.0

    def run(self, seconds: float, others: float, own: float) -> None:
        """``seconds`` pass with other programs using ``others`` cores and this process ``own``."""
        self.now += seconds
        self.system += seconds * (others + own)
        self.own += seconds * own

    def threads(self, most: int = 2, cores: int = 2) -> CpuThreads:
        return CpuThreads(most, cores, lambda: self.system, lambda: self.own, lambda: self.now)


def test_a_busy_core_elsewhere_leaves_one_thread_and_its_end_gives_the_second_back():
    machine = Machine()
    threads = machine.threads()
    machine.run(1.0, others=0.0, own=2.0)
    assert threads.count() == 2
    machine.run(1.0, others=0.9, own=1.1)  # a build started: it gets most of a core despite our spinning
    assert threads.count() == 1
    machine.run(1.0, others=1.0, own=1.0)
    assert threads.count() == 1
    machine.run(1.0, others=0.05, own=1.0)  # the build ended
    assert threads.count() == 2


def test_a_look_covers_at_least_the_window():
    machine = Machine()
    threads = machine.threads()
    machine.run(WINDOW_S / 4, others=2.0, own=0.0)  # too short to judge: 10 ms ticks
    assert threads.count() == 2
    machine.run(WINDOW_S, others=2.0, own=0.0)  # the window covers both stretches
    assert threads.count() == 1


def test_after_an_idle_spell_the_past_does_not_decide():
    machine = Machine()
    threads = machine.threads()
    machine.run(1.0, others=1.0, own=1.0)
    assert threads.count() == 1
    machine.run(STALE_S * 5, others=1.0, own=0.0)  # a build ran while the editor waited, and ended
    assert threads.count() == 2
    machine.run(WINDOW_S, others=0.0, own=2.0)
    assert threads.count() == 2
    machine.run(WINDOW_S, others=1.0, own=1.0)  # one running now is seen at the next look
    assert threads.count() == 1


def test_never_more_threads_than_it_started_with_nor_fewer_than_one():
    machine = Machine()
    threads = machine.threads(most=1, cores=8)
    machine.run(1.0, others=0.0, own=1.0)
    assert threads.count() == 1
    busy = Machine()
    threads = busy.threads(most=4, cores=4)
    busy.run(1.0, others=6.0, own=0.0)  # an overloaded machine
    assert threads.count() == 1


def test_a_model_so_made_takes_its_thread_count_before_each_call(tiny_lm, monkeypatch):
    import copy

    from sfumato.model import cpu_threads

    looks = []
    monkeypatch.setattr(cpu_threads.CpuThreads, "count", lambda self: looks.append(torch.get_num_threads()) or 1)
    model = copy.deepcopy(tiny_lm)
    threads = torch.get_num_threads()
    cpu_threads.follow_free_cores(model.base_model)
    try:
        with torch.no_grad():
            model(input_ids=torch.tensor([[1, 2, 3]]))  # the causal LM's call
            model.model(input_ids=torch.tensor([[1, 2]]))  # the base model's own, as a rewrite's reading calls it
        assert looks == [threads, 1] and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("kind", ["diffusion-gemma", "masked-diffusion"])
def test_a_checkpoint_loaded_for_the_cpu_takes_its_thread_count_before_its_passes(kind, tiny_model_dir, project_tokenizer,
                                                                                  tmp_path, monkeypatch):
    from sfumato.model import cpu_threads
    from sfumato.model.api import InfillRequest
    from sfumato.model.loading import load_backend
    from test_masked_diffusion import build_bert

    folder = tiny_model_dir if kind == "diffusion-gemma" else build_bert(tmp_path / "bert", project_tokenizer)
    looks = []
    monkeypatch.setattr(cpu_threads.CpuThreads, "count", lambda self: looks.append(1) or 1)
    threads = torch.get_num_threads()
    try:
        backend = load_backend(str(folder), device="cpu")
        for _ in backend.stream([InfillRequest(prefix="x = ", suffix="\n", max_new_tokens=4, steps=2, seed=0)]):
            pass
        assert looks and torch.get_num_threads() == 1  # the prompt's reading and every pass looked first
    finally:
        torch.set_num_threads(threads)


def test_the_real_counters_count_this_process_within_the_system():
    from sfumato.model.cpu_threads import own_busy_s, system_busy_s

    assert system_busy_s() >= own_busy_s() > 0
