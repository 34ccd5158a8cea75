"""``/metrics``: what ``ragmeter serve`` has stored and scored, in Prometheus's text format (``prometheus_client``).

Read from the store at each scrape, so several processes and restarts report the same figures:

- ``ragmeter_traces{state}``: traces open (spans arriving), due (complete, waiting to be scored) and scored;
- ``ragmeter_score_mean{metric, model, window}``, ``ragmeter_scores_defined{…}`` and ``ragmeter_scores_undefined{…}``:
  over the last 5 minutes, hour and day (:data:`WINDOWS`), per metric and model (``model_id`` of the trace's record,
  ``unknown`` without one); a window with no defined score has no mean sample, never a made-up 0;
- ``ragmeter_judge_tokens{window}`` and ``ragmeter_judge_calls{window, outcome}``: what the judge spent over each
  window (the hourly budget's own count) and its requests answered, failed and refused by the budget;
- ``ragmeter_scoring_lag_seconds``: how long the longest-waiting complete trace has waited to be scored;
- from the last drop check (:mod:`ragmeter.serve.drops`), per rule (``metric``, ``mode``):
  ``ragmeter_drop`` (1 when the rule found a drop, else 0: what an alerting rule fires on),
  ``ragmeter_drop_unmeasured`` (1 when the window had too few scores to tell), ``ragmeter_drop_difference`` (the
  window's mean minus the baseline's, where measured), and ``ragmeter_drop_check_timestamp_seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ragmeter.serve.store import Store

__all__ = ["WINDOWS", "StoreCollector"]

#: Window label → its length in seconds.
WINDOWS = {"5m": 300.0, "1h": 3600.0, "1d": 86400.0}


class StoreCollector(Collector):
    """The store's figures for a Prometheus registry."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        traces = GaugeMetricFamily(
            "ragmeter_traces", "Traces by state: open, due (complete, not scored), scored", labels=["state"]
        )
        for state, count in self.store.backlog().items():
            traces.add_metric([state], count)
        yield traces
        labels = ["metric", "model", "window"]
        mean = GaugeMetricFamily(
            "ragmeter_score_mean", "Mean of a metric's defined scores over the window", labels=labels
        )
        defined = GaugeMetricFamily(
            "ragmeter_scores_defined", "Defined scores of a metric over the window", labels=labels
        )
        undefined = GaugeMetricFamily(
            "ragmeter_scores_undefined", "Undefined scores of a metric over the window", labels=labels
        )
        now = time.time()
        for window, seconds in WINDOWS.items():
            for figure in self.store.window(now - seconds):
                values = [figure.metric, figure.model or "unknown", window]
                if figure.mean is not None:
                    mean.add_metric(values, figure.mean)
                defined.add_metric(values, figure.defined)
                undefined.add_metric(values, figure.undefined)
        yield from (mean, defined, undefined)
        spent = GaugeMetricFamily(
            "ragmeter_judge_tokens",
            "Tokens the judge spent over the window (prompt and completion; a failed request at its most)",
            labels=["window"],
        )
        for window, seconds in WINDOWS.items():
            spent.add_metric([window], self.store.spent_since(now - seconds))
        yield spent
        calls = GaugeMetricFamily(
            "ragmeter_judge_calls",
            "The judge's requests over the window: answered, failed, refused by the budget",
            labels=["window", "outcome"],
        )
        for window, seconds in WINDOWS.items():
            for outcome, count in self.store.judge_calls(now - seconds).items():
                calls.add_metric([window, outcome], count)
        yield calls
        yield GaugeMetricFamily(
            "ragmeter_scoring_lag_seconds",
            "How long the longest-waiting complete trace has waited to be scored",
            value=self.store.lag(now),
        )
        yield from _drops(self.store.checks(self.store.last_check() or 0.0)[-1:])


def _drops(last: list[dict[str, Any]]) -> Iterator[GaugeMetricFamily]:
    """The gauges of the last drop check (none before the first)."""
    labels = ["metric", "mode"]
    drop = GaugeMetricFamily("ragmeter_drop", "1 when the last check found a drop by this rule, else 0", labels=labels)
    unmeasured = GaugeMetricFamily(
        "ragmeter_drop_unmeasured", "1 when the last check had too few scores to apply this rule", labels=labels
    )
    difference = GaugeMetricFamily(
        "ragmeter_drop_difference", "The window's mean minus the baseline's at the last check", labels=labels
    )
    for check in last:
        for verdict in check["verdicts"]:
            values = [verdict["metric"], verdict["mode"]]
            drop.add_metric(values, float(verdict["status"] == "drop"))
            unmeasured.add_metric(values, float(verdict["status"] == "unmeasured"))
            if verdict["difference"] is not None:
                difference.add_metric(values, verdict["difference"])
    yield from (drop, unmeasured, difference)
    if last:
        yield GaugeMetricFamily(
            "ragmeter_drop_check_timestamp_seconds", "When the last drop check was made", value=last[0]["at"]
        )
