"""Ordering a region's alternatives, and saying when none is worth writing.

Each alternative is described by a few features: where it came from (retrieval key kind and
source, a fresh denoised sample, a retrieval-started one, or the region's current text), how
often retrieval saw it, the model's own score (``sfumato.model.candidate_score``: mean log-probability
per token), and the cheap checks of ``sfumato.model.checks``. A logistic model over these features (fit
on the held-out dev part by ``sfumato.model.training.tune_rerank``, stored as ``rerank.json`` beside the weights)
gives each alternative the log-odds that it is exactly what belongs there. Alternatives are
ordered by it; the best is confident when its probability clears the stored bar (a bar of its own
for a gap inside a sentence) and it is not a guess (``GUESSES``: kinds that were never exact on dev).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from sfumato.model.phrase_table import GAP_KINDS, SIDES

# Never exactly right on dev unless retrieval proposed the same text (a name alone, a denoised
# text): ranked like the rest, never confident.
GUESSES = ("scope", "repeat", SIDES, "sample", "started")
ORIGINS = ("span", "scope", "repeat", "pair", "above", "above1", "below", *GAP_KINDS, SIDES, "prose", "sample", "started", "original")
SOURCES = ("document", "context", "table", "phrases")
FEATURES = (*ORIGINS, *SOURCES, "log_count", "first", "prose_share", "log_prob", "parses", "no_parse", "bracket_excess",
            "unknown_names", "empty")


@dataclass(frozen=True)
class Alternative:
    """One text for the region and what is known about it before scoring."""

    text: str
    origin: str  # one of ORIGINS: a retrieval key kind, or how the model made it
    source: str = ""  # for retrieved text: one of SOURCES ("prose_model": the prose model wrote it)
    count: int = 0
    first: bool = False  # the top retrieved candidate
    share: float = 0.0  # the prose model's probability for it among its proposals


@dataclass(frozen=True)
class Evidence:
    """What was measured about an alternative in its place."""

    log_prob: float | None  # the model's mean log-probability per token (None: not scorable)
    parses: bool | None  # None: the window parses with no alternative (not Python, or cut mid-block)
    bracket_excess: int  # bracket errors beyond the fewest any alternative has
    unknown_names: int


def features(alternative: Alternative, evidence: Evidence) -> list[float]:
    values = dict.fromkeys(FEATURES, 0.0)
    values[alternative.origin] = 1.0
    if alternative.source:
        values[alternative.source] = 1.0
    values["log_count"] = math.log1p(alternative.count)
    values["first"] = float(alternative.first)
    values["prose_share"] = alternative.share
    values["log_prob"] = evidence.log_prob if evidence.log_prob is not None else 0.0
    values["parses"] = float(evidence.parses is True)
    values["no_parse"] = float(evidence.parses is False)
    values["bracket_excess"] = float(min(evidence.bracket_excess, 3))
    values["unknown_names"] = float(min(evidence.unknown_names, 3))
    values["empty"] = float(not alternative.text.strip())
    return [values[name] for name in FEATURES]


@dataclass(frozen=True)
class Ranker:
    """Logistic weights per feature, a bias, and the probability a suggestion must reach."""

    weights: dict[str, float]
    bias: float = 0.0
    confidence_bar: float = 0.5
    prose_bar: float | None = None  # the bar for a gap inside a sentence (None: confidence_bar)

    def log_odds(self, alternative: Alternative, evidence: Evidence) -> float:
        return self.bias + sum(self.weights.get(name, 0.0) * value
                               for name, value in zip(FEATURES, features(alternative, evidence)))

    def confident(self, log_odds: float, alternative: Alternative, prose: bool = False) -> bool:
        """Whether ``alternative`` is worth writing; ``prose``: its region is a gap inside a sentence."""
        bar = self.prose_bar if prose and self.prose_bar is not None else self.confidence_bar
        return alternative.origin not in GUESSES and 1.0 / (1.0 + math.exp(-log_odds)) >= bar

    @classmethod
    def load(cls, path: Path) -> Ranker:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls({name: float(data["weights"].get(name, 0.0)) for name in FEATURES},
                   float(data["bias"]), float(data["confidence_bar"]),
                   float(data["prose_bar"]) if data.get("prose_bar") is not None else None)

    def save(self, path: Path, **about) -> None:
        data = {"weights": self.weights, "bias": self.bias, "confidence_bar": self.confidence_bar,
                "prose_bar": self.prose_bar, **about}
        Path(path).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


# Until a model folder ships its own fit: retrieval order (stronger keys, more often seen) first,
# the model's belief next, and the checks as penalties.
DEFAULT = Ranker(
    dict.fromkeys(FEATURES, 0.0) | {"pair": 2.0, "above": 0.5, "above1": -0.5, "below": -0.5, "sample": -1.0, "started": -1.0, "original": 1.0,
     "document": 0.5, "log_count": 0.3, "first": 0.5, "log_prob": 0.3, "parses": 0.5, "no_parse": -1.5,
     "bracket_excess": -1.0, "unknown_names": -0.5, "empty": -3.0},
    bias=-1.0,
    confidence_bar=0.3,
)
