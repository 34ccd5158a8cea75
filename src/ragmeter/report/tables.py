"""The run figures as rows of cells, in the seeds' order: the primary table, the appendix, then the other
metrics. The HTML and Markdown reports lay them out; the terminal report has its own fixed-width rows."""

from __future__ import annotations

from typing import Any

from ragmeter.report.terminal import APPENDIX, PRIMARY, agreement_of, format_number
from ragmeter.results.aggregate import Summary
from ragmeter.results.run_result import EvalResult

__all__ = ["summary_row", "summary_tables"]


def summary_row(label: str, summary: Summary) -> dict[str, Any]:
    """One figure's cells: label, value, interval, n, undefined count, and the interval's warning."""
    interval = "" if summary.ci_low is None else f"[{format_number(summary.ci_low)}, {format_number(summary.ci_high)}]"
    value = f"{summary.value:,.0f}" if summary.statistic == "sum" else format_number(summary.value)
    return {"label": label, "value": value, "interval": interval, "n": summary.n,
            "undefined": summary.n_undefined, "warning": summary.warning, "metric": summary.metric,
            "agreement": agreement_of(summary.metric)}


def summary_tables(result: EvalResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the primary table, the appendix and the other metrics (each figure once)."""
    by_key = {(s.metric, s.statistic): s for s in result.summaries}
    shown = set()
    tables = []
    for layout in (PRIMARY, APPENDIX):
        rows = []
        for label, metric, statistic in layout:
            if (metric, statistic) in by_key:
                rows.append(summary_row(label, by_key[(metric, statistic)]))
                shown.add((metric, statistic))
        tables.append(rows)
    other = [summary_row(f"{s.metric} ({s.statistic})", s) for s in result.summaries
             if (s.metric, s.statistic) not in shown]
    return tables[0], tables[1], other
