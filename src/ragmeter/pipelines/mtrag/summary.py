"""The run summary of an MT-RAG output file: each metric's mean with its interval, overall and per
answerability class, per responding model when the file holds several.

A record's list becomes one number as MT-RAG's aggregates use it: the first reference's value for
per-reference metrics, the best passage for per-passage ones; ``RB_agg_zero_denominator`` is a rate.
Intervals follow :mod:`ragmeter.results.aggregate` (records of one conversation resampled together).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.core.files import atomic_write_text, json_number
from ragmeter.core.records import Answerability
from ragmeter.core.settings import Settings
from ragmeter.pipelines.mtrag.steps import StepReport
from ragmeter.results.aggregate import Aggregation, interval

__all__ = ["GroupMean", "summarize_rows", "write_step_summary"]

_PER_PASSAGE = ("BertKPrec", "Extractiveness_RougeL")
_RATES = ("RB_agg_zero_denominator",)
_ORDER = (
    "RB_agg_idk",
    "RB_llm_idk",
    "RL_F_idk",
    "RB_agg",
    "RB_llm",
    "RL_F",
    "RB_agg_zero_denominator",
    "Recall",
    "RougeL_stemFalse",
    "BertscoreP",
    "BertscoreR",
    "BertKPrec",
    "Extractiveness_RougeL",
    "Length",
    "LengthChars",
    "idk_eval",
)
ALL = "ALL"


@dataclass(frozen=True)
class GroupMean:
    """One metric's mean over one model's records of one answerability class (``ALL``: every class);
    ``warning`` says why its interval deserves caution, when it does."""

    model_id: str
    answerability: str
    metric: str
    mean: float
    ci_low: float
    ci_high: float
    n: int
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {k: json_number(v) if isinstance(v, float) else v for k, v in self.__dict__.items()}
        if self.warning is None:
            del data["warning"]
        return data


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
        made = interval(
            values,
            Aggregation.RATE if metric in _RATES else Aggregation.MEAN,
            settings=settings,
            clusters=clusters if len(set(clusters)) < len(clusters) else None,
        )
        out.append(
            GroupMean(
                model,
                group,
                metric,
                float(values.mean()),
                float(made.low),  # type: ignore[arg-type]
                float(made.high),
                len(values),
                made.warning,
            )
        )  # type: ignore[arg-type]
    groups = [ALL, *(a.value for a in Answerability), "UNKNOWN"]
    return sorted(out, key=lambda g: (g.model_id, _ORDER.index(g.metric), groups.index(g.answerability)))


def write_step_summary(
    report: StepReport, source: str | Path, step: str, *, settings: Settings
) -> tuple[dict[str, Any], list[GroupMean]]:
    """Summarise a step's output file and write ``OUT.summary.json`` (means, the undefined values by metric and
    reason, the judges' calls and tokens); returns the summary and its means."""
    undefined: dict[str, Counter[str]] = defaultdict(Counter)

    def rows(handle: Iterable[str]) -> Iterable[dict[str, Any]]:
        for line in handle:
            row = json.loads(line)
            for metric, reason in ((row.get("metrics") or {}).get("undefined") or {}).items():
                undefined[metric][reason] += 1
            yield row

    with report.output.open(encoding="utf-8") as handle:
        means = summarize_rows(rows(handle), settings=settings)
    summary = {
        "input": str(source),
        "output": str(report.output),
        "step": step,
        "records": report.written,
        "resumed": report.resumed,
        "computed": report.computed,
        "idk_eval_sources": dict(report.idk_sources),
        "signatures": report.signatures,
        "undefined": {metric: dict(reasons) for metric, reasons in undefined.items()},
        "judges": {
            identity: {prompt: u.to_dict() for prompt, u in usage.items()}
            for identity, usage in report.judge_usage.items()
        },
        "intervals": f"{settings.ci_method}|confidence:{settings.confidence}|n_resamples:"
        f"{settings.n_resamples}|seed:{settings.seed}",
        "means": [m.to_dict() for m in means],
    }
    atomic_write_text(report.summary_path, json.dumps(summary, indent=2, ensure_ascii=False))
    return summary, means
