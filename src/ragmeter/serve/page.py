"""``ragmeter serve``'s page at ``/``: each metric over the last hours, per model or any trace attribute, with its
intervals, and the drop checks (:mod:`ragmeter.serve.drops`); rendered on the server by the HTML report's templates
(:func:`ragmeter.report.html.render_serve_html`: Jinja2's escaping, inline SVG, nothing fetched by the browser).

The span shown (``hours``) is cut into :data:`STEPS` equal steps; in each, per group, the mean of a metric's
defined scores and its percentile bootstrap interval, conversations resampled (a step with one conversation has no
interval). ``by`` names a key of the records' ``metadata`` (the trace's root and resource attributes: ``model_id``,
``service.name``, a route the application sets); a trace without it is in the group ``(none)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragmeter.analysis.gate import GateRule
from ragmeter.core.errors import ConfigError
from ragmeter.serve.store import ScoredTrace, Store
from ragmeter.stats.intervals import bootstrap_mean_interval

__all__ = ["DEFAULT_BY", "DEFAULT_HOURS", "STEPS", "page_figures"]

STEPS = 12
DEFAULT_BY, DEFAULT_HOURS = "model_id", 24.0
#: The longest span the page shows, in hours (a week).
MAX_HOURS = 168.0
#: Resamples of each interval on the page (a page is drawn on every request).
PAGE_RESAMPLES = 500
NO_GROUP = "(none)"
#: Checks listed on the page at most.
CHECKS_SHOWN = 50


def _group(outcome: ScoredTrace, by: str) -> str:
    value = ((outcome.record or {}).get("metadata") or {}).get(by)
    return NO_GROUP if value is None else str(value)


def _figures(values: Sequence[float | None], clusters: Sequence[str], confidence: float) -> dict[str, Any]:
    """A group's scores over a step or the whole span: defined and undefined counts, mean, interval."""
    defined = np.array([v for v in values if v is not None], dtype=float)
    kept = [c for v, c in zip(values, clusters, strict=True) if v is not None]
    low, high = (
        bootstrap_mean_interval(
            defined, clusters=kept, n_resamples=PAGE_RESAMPLES, method="percentile", confidence=confidence
        )
        if len(defined)
        else (math.nan, math.nan)
    )
    return {
        "defined": len(defined),
        "undefined": len(values) - len(defined),
        "mean": float(defined.mean()) if len(defined) else None,
        "low": None if math.isnan(low) else low,
        "high": None if math.isnan(high) else high,
    }


def _step_words(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"


def page_figures(
    store: Store,
    *,
    by: str = DEFAULT_BY,
    hours: float = DEFAULT_HOURS,
    now: float | None = None,
    confidence: float = 0.95,
    watching: bool = False,
) -> dict[str, Any]:
    """What the page shows, as :func:`~ragmeter.report.html.render_serve_html` takes it."""
    if not (0 < hours <= MAX_HOURS) or not by.strip():
        raise ConfigError(f"the page shows 0 to {MAX_HOURS:g} hours by a metadata key: got hours={hours:g}, by={by!r}")
    until = time.time() if now is None else now
    since = until - hours * 3600
    step = hours * 3600 / STEPS
    # per metric, per group: the scores and their conversations, per step and over the span
    cells: dict[str, dict[str, dict[int, tuple[list[float | None], list[str]]]]] = {}
    for outcome in store.scored(since, until):
        group = _group(outcome, by)
        cluster = str((outcome.record or {}).get("conversation_id") or outcome.trace_id)
        position = min(STEPS - 1, int((outcome.scored - since) // step))
        for metric, value in outcome.scores.items():
            values, clusters = cells.setdefault(metric, {}).setdefault(group, {}).setdefault(position, ([], []))
            values.append(value)
            clusters.append(cluster)
    panels = []
    for metric in sorted(cells):
        series: dict[str, list[tuple[float, float, float, float]]] = {}
        rows = []
        for group in sorted(cells[metric]):
            steps = cells[metric][group]
            for position in sorted(steps):
                figures = _figures(*steps[position], confidence)
                if figures["mean"] is not None:
                    low, high = figures["low"], figures["high"]
                    series.setdefault(group, []).append(
                        (
                            since + (position + 0.5) * step,
                            figures["mean"],
                            math.nan if low is None else low,
                            math.nan if high is None else high,
                        )
                    )
            span_values = [v for position in sorted(steps) for v in steps[position][0]]
            span_clusters = [c for position in sorted(steps) for c in steps[position][1]]
            rows.append({"group": group, **_figures(span_values, span_clusters, confidence)})
        panels.append({"metric": metric, "series": series, "rows": rows})
    return {
        "panels": panels,
        "checks": _checks(store.checks(since)),
        "hours": f"{hours:g}",
        "by": by,
        "until": time.strftime("%Y-%m-%d %H:%M", time.gmtime(until)),
        "step": _step_words(step),
        "backlog": store.backlog(),
        "lag": store.lag(until),
        "judge_tokens": store.spent_since(until - 3600),
        "watching": watching,
        "confidence": confidence,
    }


def _checks(checks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The last check of the span and each one that found a drop, the newest first (:data:`CHECKS_SHOWN` at
    most), each with its times in words and its rules' verdicts."""

    def stamp(t: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))

    shown = []
    kept = [check for k, check in enumerate(checks) if check["status"] == "drop" or k == len(checks) - 1]
    for check in reversed(kept[-CHECKS_SHOWN:]):
        verdicts = [
            {"rule": str(GateRule(v["metric"], v["margin"])), "status": v["status"], "reason": v["reason"]}
            for v in check["verdicts"]
        ]
        shown.append(
            {
                "at_text": stamp(check["at"]),
                "window": f"{stamp(check['since'])} – {stamp(check['until'])}",
                "baseline": check["baseline"],
                "verdicts": verdicts,
            }
        )
    return shown
