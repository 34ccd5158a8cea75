"""The paired analysis of seeds 000/001: reading two metrics of the same items together.

*Grounded × correct.* Faithfulness (or Overlap) against F1 (or EM) tells apart answers that follow their evidence
but miss the gold (bad context, or a gold phrased otherwise) from answers that are simply wrong. Each item with
both values falls in one cell of a 2×2 table: grounded when the grounding metric is at least its threshold,
correct when the correctness metric is at least its threshold. The table gives each cell's count, share and one
example item. Items with either value undefined are left out, counted, and so are the items that abstain (when the
run has ``abstained``): a refusal is neither grounded nor wrong, and the gate's figures below are about them. The
metrics and thresholds are options (``metric:threshold``, e.g. ``token_f1:0.5``) and go into the table's
signature.

*The default thresholds* (:data:`DEFAULT_THRESHOLDS`, else :data:`DEFAULT_THRESHOLD`). Grounded means at least half of
what the answer claims is supported. Seed 001 defines "Overlap = (# kalimat supported) / (# kalimat klaim)" and reads it
as a share ("0.45 berarti ±45% kalimat didukung bukti yang benar": about 45% of the sentences are backed by the right
evidence), so Overlap's threshold is 0.5, as is that of ``judge_faithfulness`` (supported claims / claims, seed 002),
its IDK-conditioned twin (first, since it agrees with people best) and ``faithfulness_offline``. The fallback
Faithfulness is "min(1.0, 0.6 + 0.4 × Overlap)", which seed 000 calls "a baseline score of 0.6 for a plausible but
unsupported answer": every answer that does not abstain scores at least 0.6, so 0.5 on it would call every answer
grounded. Its threshold is Overlap's 0.5 on its own scale, 0.6 + 0.4 · 0.5 = 0.8, which an answer reaches exactly when
its Overlap reaches 0.5. Correct means a token F1 of at least 0.5, or an exact match.

*The gate.* Tokens and latency against the abstain rate, per run: an uncertainty gate should save tokens and time
on the items it declines, and a comparison shows what that saving costs in answers lost. Per run: the abstain
rate, mean tokens per item and per answered item, and P50/P95 latency of the answered items.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError
from ragmeter.core.signature import Signature

__all__ = ["CELL_READINGS", "GateRow", "Quadrant", "Threshold", "default_thresholds", "gate_row", "grounding_quadrant"]

#: The grounding metrics, in the order the default picks the first a run has.
GROUNDING = ("judge_faithfulness_idk", "judge_faithfulness", "faithfulness_offline", "faithfulness_fallback", "overlap")
#: The correctness metrics, likewise.
CORRECTNESS = ("token_f1", "exact_match")
DEFAULT_THRESHOLD = 0.5
#: The metrics whose default threshold is not ``DEFAULT_THRESHOLD`` (see the module docstring).
DEFAULT_THRESHOLDS = {"faithfulness_fallback": 0.6 + 0.4 * DEFAULT_THRESHOLD, "exact_match": 1.0}
#: What each cell (grounded, correct) suggests, after seed 001's reading of the paired metrics.
CELL_READINGS = {
    (True, True): "grounded and right",
    (True, False): "follows its evidence, misses the gold: bad context, or the gold phrased otherwise",
    (False, True): "right without support: the model's own knowledge, or a claim it did not cite",
    (False, False): "likely hallucinated or contradicting the evidence, and wrong",
}


@dataclass(frozen=True)
class Threshold:
    """An item passes when ``metric`` is at least ``at_least``."""

    metric: str
    at_least: float

    @classmethod
    def parse(cls, text: str) -> Threshold:
        """``metric:threshold`` (``token_f1:0.5``); a metric alone takes its default: ``DEFAULT_THRESHOLDS``, else
        ``DEFAULT_THRESHOLD``."""
        metric, sep, value = text.partition(":")
        if not metric.strip():
            raise ConfigError(f"a threshold is METRIC:VALUE (e.g. token_f1:0.5), got {text!r}")
        if not sep:
            return cls(metric.strip(), DEFAULT_THRESHOLDS.get(metric.strip(), DEFAULT_THRESHOLD))
        try:
            return cls(metric.strip(), float(value))
        except ValueError:
            raise ConfigError(f"a threshold is METRIC:VALUE with a number, got {text!r}") from None

    def __str__(self) -> str:
        return f"{self.metric}≥{self.at_least:g}"


def default_thresholds(metrics: Sequence[str]) -> tuple[Threshold, Threshold] | None:
    """The first grounding and correctness metrics among ``metrics``, at their default thresholds."""
    grounded = next((m for m in GROUNDING if m in metrics), None)
    correct = next((m for m in CORRECTNESS if m in metrics), None)
    if grounded is None or correct is None:
        return None
    return Threshold.parse(grounded), Threshold.parse(correct)


@dataclass(frozen=True)
class Cell:
    count: int
    share: float
    example: str | None


@dataclass(frozen=True)
class Quadrant:
    """The grounded × correct table: ``cells[(grounded, correct)]``."""

    grounded: Threshold
    correct: Threshold
    cells: Mapping[tuple[bool, bool], Cell]
    n: int
    n_left_out: int
    n_abstained: int = 0

    @property
    def signature(self) -> str:
        return Signature(
            "paired_analysis", {"grounded": self.grounded, "correct": self.correct}, sort_keys=False
        ).render()

    def to_dict(self) -> dict[str, Any]:
        return {
            "grounded": str(self.grounded),
            "correct": str(self.correct),
            "n": self.n,
            "n_left_out": self.n_left_out,
            "n_abstained": self.n_abstained,
            "signature": self.signature,
            "cells": [
                {
                    "grounded": g,
                    "correct": c,
                    "count": cell.count,
                    "share": None if math.isnan(cell.share) else cell.share,
                    "example": cell.example,
                    "reading": CELL_READINGS[(g, c)],
                }
                for (g, c), cell in self.cells.items()
            ],
        }


def grounding_quadrant(
    item_ids: Sequence[str], scores: Mapping[str, np.ndarray], grounded: Threshold, correct: Threshold
) -> Quadrant:
    """The 2×2 table of the items that answer (``abstained`` 0, where the run has it) and have both metrics
    defined; the first item of each cell is its example."""
    for threshold in (grounded, correct):
        if threshold.metric not in scores:
            raise ConfigError(
                f"the paired analysis reads {threshold.metric}, which this run did not compute; "
                f"it has {', '.join(scores)}"
            )
    g, c = (np.asarray(scores[t.metric], dtype=float) for t in (grounded, correct))
    abstains = np.asarray(scores["abstained"], dtype=float) == 1 if "abstained" in scores else np.zeros(len(g), bool)
    both = ~np.isnan(g) & ~np.isnan(c) & ~abstains
    n = int(both.sum())
    cells = {}
    for is_grounded in (True, False):
        for is_correct in (True, False):
            members = np.flatnonzero(
                both & ((g >= grounded.at_least) == is_grounded) & ((c >= correct.at_least) == is_correct)
            )
            cells[(is_grounded, is_correct)] = Cell(
                len(members), len(members) / n if n else math.nan, item_ids[members[0]] if len(members) else None
            )
    n_abstained = int(abstains.sum())
    return Quadrant(grounded, correct, cells, n, len(g) - n - n_abstained, n_abstained)


@dataclass(frozen=True)
class GateRow:
    """One run's side of the gate: how often it abstains, and what answering costs."""

    run: str
    n: int
    abstain_rate: float
    tokens_per_item: float
    tokens_per_answered: float
    p50_latency_answered: float
    p95_latency_answered: float

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def gate_row(run: str, scores: Mapping[str, np.ndarray]) -> GateRow | None:
    """The gate figures of a run's items (``None`` without ``abstained``); NaN where a metric is missing."""
    if "abstained" not in scores:
        return None
    abstained = np.asarray(scores["abstained"], dtype=float)
    answered = abstained == 0

    def mean(name: str, mask: np.ndarray) -> float:
        values = np.asarray(scores[name], dtype=float)[mask] if name in scores else np.array([])
        values = values[~np.isnan(values)]
        return float(values.mean()) if len(values) else math.nan

    def latency(q: float) -> float:
        if "latency_ms" not in scores:
            return math.nan
        values = np.asarray(scores["latency_ms"], dtype=float)[answered]
        values = values[~np.isnan(values)]
        return float(np.percentile(values, q)) if len(values) else math.nan

    defined = ~np.isnan(abstained)
    return GateRow(
        run,
        int(defined.sum()),
        float(abstained[defined].mean()) if defined.any() else math.nan,
        mean("total_tokens", np.ones(len(abstained), bool)),
        mean("total_tokens", answered),
        latency(50),
        latency(95),
    )
