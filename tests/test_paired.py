"""Two evaluation reports compared item by item (``sfumato.model.training.paired``)."""

import pytest

from sfumato.model.training import paired


def _report(results: dict[str, list[tuple[str, str, bool, float]]]) -> dict:
    counted = {"block": "parses"}
    return {kind: {"engine": {"items": [{"reference": r, "result": x, counted.get(kind, "exact"): hit, "similarity": sim}
                                        for r, x, hit, sim in items]}}
            for kind, items in results.items()}


def _tasks(kind, n, hit, sim, text="x"):
    return [(f"{kind} reference {i}", text, hit, sim) for i in range(n)]


def test_one_better_item_in_each_kind_is_a_difference_of_four_exact_and_its_similarity():
    base = {kind: _tasks(kind, 10, False, 0.5) for kind in paired.FOUR}
    cand = {kind: [(items[0][0], "better", True, 1.0), *items[1:]] for kind, items in base.items()}
    out = paired.compare(paired.item_pairs(_report(base), _report(cand), "engine"))
    assert out["line"] == {"n": 10, "differ": 1, "exact": 1.0, "similarity": 0.05}
    assert out["block"]["parses"] == 1.0
    assert out["four"]["exact"] == 4.0 and out["four"]["similarity"] == 0.05
    low, high = out["four"]["exact_95"]
    assert low <= 4.0 <= high and low >= 0  # no resample can make a candidate that is never worse worse
    assert out["four"]["similarity_95"][0] >= 0


def test_identical_reports_differ_by_nothing_with_no_width():
    base = {kind: _tasks(kind, 8, True, 0.7) for kind in paired.FOUR}
    out = paired.compare(paired.item_pairs(_report(base), _report(base), "engine"))
    assert out["four"] == {"exact": 0.0, "exact_95": [0.0, 0.0], "similarity": 0.0, "similarity_95": [0.0, 0.0]}


def test_reports_of_different_tasks_are_refused():
    base = _report({"line": _tasks("line", 5, True, 1.0)})
    other = _report({"line": _tasks("other", 5, True, 1.0)})
    with pytest.raises(ValueError, match="same tasks"):
        paired.item_pairs(base, other, "engine")


def test_a_report_run_as_two_processes_is_read_as_one(tmp_path):
    import json

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"adapter": "x", **_report({"line": _tasks("line", 2, True, 1.0)})}))
    second.write_text(json.dumps({"adapter": "x", **_report({"block": _tasks("block", 3, False, 0.2)})}))
    joined = paired.read_joined(f"{first},{second}")
    assert set(joined) == {"line", "block"}
