"""The report of an MT-RAG pipeline step: what it did, and its summary table (one per model: metrics down, ALL and
each answerability class across)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from ragmeter._version import __version__

if TYPE_CHECKING:
    from ragmeter.pipelines.mtrag.steps import StepReport
    from ragmeter.pipelines.mtrag.summary import GroupMean

__all__ = ["render_step", "render_summary"]


def render_step(report: StepReport, step: str, output: str | Path) -> str:
    """What a step did: records written to ``output`` (as the caller named it), computed and taken over, the
    signatures, where each ``idk_eval`` came from, and the values left undefined."""
    lines = [
        (
            f"ragmeter {__version__} — MT-RAG step '{step}': {report.written} records written to {output} "
            f"({report.computed} computed, {report.resumed} taken over from an interrupted run)"
        )
    ]
    lines += [f"{name}: {text}" for name, text in report.signatures.items()]
    if report.idk_sources:
        lines.append("idk_eval from: " + ", ".join(f"{source} × {n}" for source, n in report.idk_sources.items()))
    if report.undefined:
        lines.append(
            "undefined (null, reason in metrics.undefined): "
            + ", ".join(f"{name} × {n}" for name, n in report.undefined.items())
        )
    return "\n".join(lines)


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
