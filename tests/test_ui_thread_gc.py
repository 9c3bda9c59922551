"""Cycles are collected on the Qt thread: a Qt object in garbage is never destroyed by the thread
that happened to allocate (the inference thread, in the application)."""

from __future__ import annotations

import gc
import threading

from PySide6.QtCore import Qt, QTimer


class Holder:
    """An object in a cycle with itself, holding a Qt timer: only the cycle collector frees it."""

    def __init__(self):
        self.timer = QTimer()
        self.me = self


def test_a_qt_object_in_a_cycle_is_destroyed_on_the_qt_thread_while_another_thread_allocates(qtbot, cycles_collector):
    freed_on = []
    gc.collect()  # nothing pending: the next collection is the allocating thread's own
    holder = Holder()
    holder.timer.destroyed.connect(lambda: freed_on.append(threading.current_thread()), Qt.ConnectionType.DirectConnection)
    del holder
    kept = []  # alive: the thread's allocations count towards a collection
    allocating = threading.Thread(target=lambda: kept.extend([] for _ in range(50_000)), name="allocating")
    allocating.start()
    allocating.join()
    qtbot.waitUntil(lambda: bool(freed_on), timeout=5000)
    assert freed_on == [threading.main_thread()]


def test_a_stopped_collector_frees_what_was_pending_and_gives_collection_back(cycles_collector):
    assert not gc.isenabled()
    holder = Holder()
    freed = []
    holder.timer.destroyed.connect(lambda: freed.append(True), Qt.ConnectionType.DirectConnection)
    del holder
    cycles_collector.stop()
    try:
        assert freed == [True] and gc.isenabled()
    finally:
        cycles_collector.start()


def test_a_burst_of_allocations_like_a_models_load_gets_its_full_collection_when_it_is_over(cycles_collector):
    """Not at the next busy moment: a full collection there fell in the first rewrite (0.3 s)."""
    from sfumato.app.ui_thread_gc import collect_after_load

    collect_after_load()  # nothing moved up yet, whatever the tests before left
    full_collections = gc.get_stats()[2]["collections"]
    kept = [[] for _ in range(500_000 + len(gc.get_objects(2)) // 2)]  # past a quarter of what is long-lived
    cycles_collector.collect_due()  # busy: the young generation only
    assert gc.get_stats()[2]["collections"] == full_collections
    cycles_collector.collect_due()  # quiet
    assert gc.get_stats()[2]["collections"] == full_collections + 1
    cycles_collector.collect_due()  # quiet, nothing more moved up
    assert gc.get_stats()[2]["collections"] == full_collections + 1
    del kept


def test_a_models_load_ends_with_a_full_collection_and_the_next_young_ones_move_up_without_one(cycles_collector):
    from sfumato.app.ui_thread_gc import collect_after_load

    kept = [[] for _ in range(200_000)]
    full_collections = gc.get_stats()[2]["collections"]
    collect_after_load()
    assert gc.get_stats()[2]["collections"] == full_collections + 1
    first_rewrite = [[] for _ in range(len(gc.get_objects(2)) // 8)]  # an eighth more: not yet due
    cycles_collector.collect_due()
    cycles_collector.collect_due()
    assert gc.get_stats()[2]["collections"] == full_collections + 1
    del kept, first_rewrite
