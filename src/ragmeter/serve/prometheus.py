"""``/metrics``: what ``ragmeter serve`` has stored and scored, in Prometheus's text format (``prometheus_client``).

Read from the store at each scrape, so several processes and restarts report the same figures:

- ``ragmeter_traces{state}``: traces open (spans arriving), due (complete, waiting to be scored) and scored;
- ``ragmeter_score_mean{metric, model, window}``, ``ragmeter_scores_defined{…}`` and ``ragmeter_scores_undefined{…}``:
  over the last 5 minutes, hour and day (:data:`WINDOWS`), per metric and model (``model_id`` of the trace's record,
  ``unknown`` without one); a window with no defined score has no mean sample, never a made-up 0;
- ``ragmeter_judge_tokens{window}``: what the judge spent over each window (the hourly budget's own count).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ragmeter.serve.store import SqliteStore

__all__ = ["WINDOWS", "StoreCollector"]

#: Window label → its length in seconds.
WINDOWS = {"5m": 300.0, "1h": 3600.0, "1d": 86400.0}


class StoreCollector(Collector):
    """The store's figures for a Prometheus registry."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        traces = GaugeMetricFamily("ragmeter_traces", "Traces by state: open, due (complete, not scored), scored",
                                   labels=["state"])
        for state, count in self.store.backlog().items():
            traces.add_metric([state], count)
        yield traces
        labels = ["metric", "model", "window"]
        mean = GaugeMetricFamily("ragmeter_score_mean", "Mean of a metric's defined scores over the window",
                                 labels=labels)
        defined = GaugeMetricFamily("ragmeter_scores_defined", "Defined scores of a metric over the window",
                                    labels=labels)
        undefined = GaugeMetricFamily("ragmeter_scores_undefined", "Undefined scores of a metric over the window",
                                      labels=labels)
        now = time.time()
        for window, seconds in WINDOWS.items():
            for figure in self.store.window(now - seconds):
                values = [figure.metric, figure.model or "unknown", window]
                if figure.mean is not None:
                    mean.add_metric(values, figure.mean)
                defined.add_metric(values, figure.defined)
                undefined.add_metric(values, figure.undefined)
        yield from (mean, defined, undefined)
        spent = GaugeMetricFamily("ragmeter_judge_tokens", "Tokens the judge spent over the window (prompt and "
                                  "completion; a failed request at its most)", labels=["window"])
        for window, seconds in WINDOWS.items():
            spent.add_metric([window], self.store.spent_since(now - seconds))
        yield spent
