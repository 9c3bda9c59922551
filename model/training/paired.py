"""Two ``evaluate_lm --out`` reports of the same tasks, compared item by item.

Most results of two nearby checkpoints are the same text, so the difference of their figures is read
far more precisely from the items that differ than by setting two totals side by side. For each kind,
and for the four the ship rule adds up (line, prose and repair exact, block parses; their mean
similarity), the candidate's difference from the baseline with a 95% interval from a paired bootstrap
(the same resampled items for both, each kind resampled apart).

    python -m sfumato.model.training.paired BASELINE.json[,MORE.json] CANDIDATE.json[,MORE.json] [--system engine]

(a comma joins the reports of one adapter's evaluation run as several processes)
"""

import argparse
import json
import random
import statistics
from pathlib import Path

FOUR = {"line": "exact", "prose": "exact", "repair": "exact", "block": "parses"}  # what the ship rule counts
RESAMPLES = 2000


def item_pairs(baseline: dict, candidate: dict, system: str) -> dict[str, list[tuple[dict, dict]]]:
    """Per kind in both reports, each task's (baseline item, candidate item); the tasks must be the same."""
    pairs = {}
    for kind in FOUR.keys() | {"body", "end", "wrapped", "last", "value"}:
        a, b = (report.get(kind, {}).get(system) for report in (baseline, candidate))
        if not a or not b:
            continue
        if [x["reference"] for x in a["items"]] != [x["reference"] for x in b["items"]]:
            raise ValueError(f"{kind}: the two reports are not of the same tasks (another seed or count?)")
        pairs[kind] = list(zip(a["items"], b["items"]))
    return pairs


def _four(pairs: dict, picks: dict[str, list[int]]) -> tuple[float, float]:
    """(difference in exact of four, in mean similarity of four) on the items ``picks`` names."""
    counted = [sum(float(b[FOUR[k]]) - float(a[FOUR[k]]) for a, b in (pairs[k][i] for i in picks[k])) for k in FOUR]
    similar = [statistics.mean(b["similarity"] - a["similarity"] for a, b in (pairs[k][i] for i in picks[k])) for k in FOUR]
    return sum(counted), statistics.mean(similar)


def compare(pairs: dict, seed: int = 0) -> dict:
    """Differences (candidate - baseline) with 95% bootstrap intervals, per kind and for the four."""
    rng = random.Random(seed)
    out = {}
    for kind, items in pairs.items():
        counted = FOUR.get(kind, "exact")
        out[kind] = {"n": len(items), "differ": sum(a["result"] != b["result"] for a, b in items),
                     counted: sum(float(b[counted]) - float(a[counted]) for a, b in items),
                     "similarity": round(statistics.mean(b["similarity"] - a["similarity"] for a, b in items), 4)}
    if FOUR.keys() <= pairs.keys():
        whole = {k: list(range(len(pairs[k]))) for k in FOUR}
        draws = [_four(pairs, {k: rng.choices(whole[k], k=len(whole[k])) for k in FOUR}) for _ in range(RESAMPLES)]
        exact_draws, similar_draws = sorted(d[0] for d in draws), sorted(d[1] for d in draws)
        low, high = int(0.025 * RESAMPLES), int(0.975 * RESAMPLES) - 1
        exact_diff, similar_diff = _four(pairs, whole)
        out["four"] = {"exact": exact_diff, "exact_95": [exact_draws[low], exact_draws[high]],
                       "similarity": round(similar_diff, 4),
                       "similarity_95": [round(similar_draws[low], 4), round(similar_draws[high], 4)]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline")
    parser.add_argument("candidate")
    parser.add_argument("--system", default="engine")
    args = parser.parse_args()
    reports = [read_joined(paths) for paths in (args.baseline, args.candidate)]
    print(json.dumps(compare(item_pairs(*reports, args.system)), indent=1))


def read_joined(paths: str) -> dict:
    """The reports named in ``paths`` (comma-separated) as one: each kind from the report holding it."""
    joined: dict = {}
    for path in paths.split(","):
        joined |= {k: v for k, v in json.loads(Path(path).read_text()).items() if isinstance(v, dict)}
    return joined


if __name__ == "__main__":
    main()
