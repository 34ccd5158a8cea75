"""The run report as text: the seeds' primary table and appendix, every figure with its interval."""

from __future__ import annotations

import math

from ragmeter.result import EvalResult, Summary

__all__ = ["APPENDIX", "PRIMARY", "render_report"]

# (label, metric, statistic) in the order seeds 000/001 report them.
PRIMARY = (("Faithfulness (fallback)", "faithfulness_fallback", "mean"), ("Overlap", "overlap", "mean"),
           ("F1", "token_f1", "mean"), ("Tokens (mean)", "total_tokens", "mean"),
           ("P50 latency (ms)", "latency_ms", "p50"), ("Abstain rate", "abstained", "rate"))
APPENDIX = (("EM", "exact_match", "rate"), ("P95 latency (ms)", "latency_ms", "p95"),
            ("Prompt tokens (mean)", "prompt_tokens", "mean"),
            ("Completion tokens (mean)", "completion_tokens", "mean"),
            ("IDK+Cit count (must be 0)", "idk_citation_count", "sum"))
_WIDTHS = (34, 10, 20, 7)


def _number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3f}"


def _row(label: str, s: Summary) -> str:
    interval = "" if s.ci_low is None else f"[{_number(s.ci_low)}, {_number(s.ci_high)}]"
    undefined = f"{s.n_undefined}/{s.n + s.n_undefined}" if s.n_undefined else "0"
    value = f"{s.value:.0f}" if s.statistic == "sum" else _number(s.value)
    line = f"{label:<{_WIDTHS[0]}}{value:>{_WIDTHS[1]}}  {interval:<{_WIDTHS[2]}}{s.n:>{_WIDTHS[3]}}  {undefined}"
    if s.statistic == "sum" and s.value > 0:
        line += "   ← contract violated"
    return line


def _section(title: str, rows: list[str]) -> list[str]:
    if not rows:
        return []
    header = f"{title:<{_WIDTHS[0]}}{'value':>{_WIDTHS[1]}}  {'95% CI':<{_WIDTHS[2]}}{'n':>{_WIDTHS[3]}}  undefined"
    return ["", header, "─" * len(header), *rows]


def render_report(result: EvalResult, *, title: str) -> str:
    """The primary table, the appendix, any other selected metric, undefined reasons, signatures."""
    by_key = {(s.metric, s.statistic): s for s in result.summaries}
    shown: set[tuple[str, str]] = set()

    def rows(layout: tuple[tuple[str, str, str], ...]) -> list[str]:
        out = []
        for label, metric, statistic in layout:
            if (metric, statistic) in by_key:
                out.append(_row(label, by_key[(metric, statistic)]))
                shown.add((metric, statistic))
        return out

    lines = [title, f"N = {len(result)}"]
    lines += _section("Primary", rows(PRIMARY))
    lines += _section("Appendix", rows(APPENDIX))
    lines += _section("Other metrics", [_row(f"{s.metric} ({s.statistic})", s) for s in result.summaries
                                        if (s.metric, s.statistic) not in shown])
    reasons = sorted({(s.metric, reason, count) for s in result.summaries
                      for reason, count in s.undefined_reasons.items()})
    if reasons:
        lines += ["", "Undefined items"] + [f"  {m}: {count} × {reason}" for m, reason, count in reasons]
    confidence = result.settings.confidence
    lines += ["", f"Intervals: {confidence:.0%}; signatures:"]
    lines += [f"  {text}" for text in dict.fromkeys(s.signature.render() for s in result.summaries)]
    return "\n".join(lines)
