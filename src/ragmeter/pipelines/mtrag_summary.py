"""The run summary of an MT-RAG output file: each metric's mean with its interval, overall and per
answerability class, per responding model when the file holds several.

A record's list becomes one number as MT-RAG's aggregates use it: the first reference's value for
per-reference metrics, the best passage for per-passage ones; ``RB_agg_zero_denominator`` is a rate.
Records sharing a conversation are resampled together.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ragmeter.records import Answerability
from ragmeter.scoring import Settings
from ragmeter.stats.intervals import bootstrap_mean_interval, wilson_interval

__all__ = ["GroupMean", "render_summary", "summarize_rows"]

_PER_PASSAGE = ("BertKPrec", "Extractiveness_RougeL")
_RATES = ("RB_agg_zero_denominator",)
_ORDER = ("RB_agg_idk", "RB_llm_idk", "RL_F_idk", "RB_agg", "RB_llm", "RL_F", "RB_agg_zero_denominator", "Recall",
          "RougeL_stemFalse", "BertscoreP", "BertscoreR", "BertKPrec", "Extractiveness_RougeL", "Length",
          "LengthChars", "idk_eval")
ALL = "ALL"


@dataclass(frozen=True)
class GroupMean:
    model_id: str
    answerability: str
    metric: str
    mean: float
    ci_low: float
    ci_high: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def _scalar(metric: str, values: Any) -> float | None:
    if not isinstance(values, list) or not values or any(v is None for v in values):
        return None
    return float(max(values) if metric in _PER_PASSAGE else values[0])


def _answerability(row: dict[str, Any]) -> str:
    value = row.get("answerability", row.get("Answerability"))
    if isinstance(value, list):
        value = value[0] if value else None
    label = str(value).strip().upper() if value else ""
    return label if label in Answerability.__members__ else "UNKNOWN"


def summarize_rows(rows: Iterable[dict[str, Any]], *, settings: Settings) -> list[GroupMean]:
    """Means and intervals of every known metric found in the rows' ``metrics`` objects."""
    cells: dict[tuple[str, str, str], list[tuple[float, str]]] = defaultdict(list)
    for row in rows:
        model = str(row.get("model_id", ALL))
        cluster = str(row.get("conversation_id", row.get("task_id")))
        for metric, values in (row.get("metrics") or {}).items():
            value = _scalar(metric, values) if metric in _ORDER else None
            if value is not None:
                for group in (ALL, _answerability(row)):
                    cells[(model, group, metric)].append((value, cluster))
    out = []
    for (model, group, metric), pairs in cells.items():
        values = np.array([v for v, _ in pairs])
        clusters = [c for _, c in pairs]
        shared = len(set(clusters)) < len(clusters)
        if metric in _RATES and not shared:
            low, high = wilson_interval(int(values.sum()), len(values), confidence=settings.confidence)
        else:
            low, high = bootstrap_mean_interval(values, clusters=clusters if shared else None,
                                                n_resamples=settings.n_resamples, method=settings.ci_method,
                                                confidence=settings.confidence, seed=settings.seed)
        out.append(GroupMean(model, group, metric, float(values.mean()), low, high, len(values)))
    groups = [ALL, *(a.value for a in Answerability), "UNKNOWN"]
    return sorted(out, key=lambda g: (g.model_id, _ORDER.index(g.metric), groups.index(g.answerability)))


def render_summary(means: list[GroupMean]) -> str:
    """One table per model: metrics down, ALL and each answerability class across."""
    lines: list[str] = []
    for model in dict.fromkeys(g.model_id for g in means):
        rows = [g for g in means if g.model_id == model]
        groups = list(dict.fromkeys(g.answerability for g in rows))
        counts = {g.answerability: g.n for g in rows if g.metric == rows[0].metric}
        header = f"{'metric':<24}" + "".join(f"{f'{c} (n={counts.get(c, 0)})':<26}" for c in groups)
        lines += ["", f"model: {model}", header, "─" * len(header)]
        for metric in dict.fromkeys(g.metric for g in rows):
            by_group = {g.answerability: g for g in rows if g.metric == metric}
            cells = "".join(f"{_cell(by_group.get(c)):<26}" for c in groups)
            lines.append(f"{metric:<24}{cells}")
    return "\n".join(lines).lstrip("\n")


def _cell(g: GroupMean | None) -> str:
    if g is None:
        return "–"
    if math.isnan(g.ci_low):
        return f"{g.mean:.3f}"
    return f"{g.mean:.3f} [{g.ci_low:.2f}, {g.ci_high:.2f}]"
