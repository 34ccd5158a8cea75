"""The run figures as rows of cells, in the seeds' order: the primary table, the appendix, then the other
metrics. The HTML and Markdown reports lay them out; the terminal report has its own fixed-width rows."""

from __future__ import annotations

from typing import Any

from ragmeter.report.terminal import APPENDIX, PRIMARY, agreement_of, format_number
from ragmeter.results.aggregate import Summary
from ragmeter.results.diagnostics import pipeline_diagnostics
from ragmeter.results.run_result import EvalResult

__all__ = ["diagnostics_tables", "summary_row", "summary_tables"]


def summary_row(label: str, summary: Summary) -> dict[str, Any]:
    """One figure's cells: label, value, interval, n, undefined count, and the interval's warning."""
    interval = "" if summary.ci_low is None else f"[{format_number(summary.ci_low)}, {format_number(summary.ci_high)}]"
    value = f"{summary.value:,.0f}" if summary.statistic == "sum" else format_number(summary.value)
    return {
        "label": label,
        "value": value,
        "interval": interval,
        "n": summary.n,
        "undefined": summary.n_undefined,
        "warning": summary.warning,
        "metric": summary.metric,
        "agreement": agreement_of(summary.metric),
    }


def summary_tables(result: EvalResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the primary table, the appendix and the other metrics (each figure once; those of the
    diagnostics, :func:`diagnostics_tables`, in theirs)."""
    by_key = {(s.metric, s.statistic): s for s in result.summaries}
    diagnostics = pipeline_diagnostics(result.summaries)
    shown = {(s.metric, s.statistic) for _, rows in diagnostics.stages for _, s in rows} if diagnostics else set()
    tables = []
    for layout in (PRIMARY, APPENDIX):
        rows = []
        for label, metric, statistic in layout:
            if (metric, statistic) in by_key:
                rows.append(summary_row(label, by_key[(metric, statistic)]))
                shown.add((metric, statistic))
        tables.append(rows)
    other = [
        summary_row(f"{s.metric} ({s.statistic})", s) for s in result.summaries if (s.metric, s.statistic) not in shown
    ]
    return tables[0], tables[1], other


def diagnostics_tables(result: EvalResult) -> tuple[list[tuple[str, list[dict[str, Any]]]], str] | None:
    """Where the pipeline fails (:mod:`ragmeter.results.diagnostics`): (stage title, its rows with ``what`` each
    says) per stage, and the reading; ``None`` when the run has no claim-level diagnostics."""
    diagnostics = pipeline_diagnostics(result.summaries)
    if diagnostics is None:
        return None
    return (
        [
            (title, [{**summary_row(s.metric, s), "what": what} for what, s in rows])
            for title, rows in diagnostics.stages
        ],
        diagnostics.reading,
    )
