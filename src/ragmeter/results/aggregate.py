"""From per-item values to run figures: the one place that decides how values aggregate and which interval
each figure carries. :func:`ragmeter.evaluate`, the MT-RAG summary and run comparison all go through it.

The interval policy (SPEC §6):

- a mean: bootstrap (BCa or percentile, ``settings.n_resamples`` resamples, ``settings.seed``), resampling
  whole clusters (conversations) when items share one;
- a rate of 0/1 values: Wilson's score interval; when items share clusters, Wilson's interval on the
  effective sample size n / deff, with Kish's design effect estimated from the clusters (a bootstrap of a
  rate collapses to a point at 0 of n and n of n);
- P50/P95: percentile bootstrap over items;
- a sum: no interval.

Clusters are conversations within one answering system (:func:`cluster_labels`). Resampling fewer than
:data:`MIN_CLUSTERS` clusters gives intervals that say nothing (two conversations give ``[0.6, 0.6]``), so
then a mean's items are resampled instead, and the figure's signature and warning say so. A rate's design
effect cannot be trusted from so few clusters either, so it takes the worst case, every turn of a
conversation alike (:func:`~ragmeter.stats.intervals.wilson_deff_interval`), and the warning says so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from ragmeter.core.files import json_number
from ragmeter.core.settings import Settings
from ragmeter.core.signature import Signature
from ragmeter.stats.intervals import (
    bootstrap_mean_interval,
    bootstrap_mean_intervals,
    bootstrap_quantile_interval,
    wilson_deff_interval,
    wilson_interval,
)

__all__ = [
    "MIN_CLUSTERS",
    "Aggregation",
    "Column",
    "Interval",
    "Summary",
    "cluster_labels",
    "interval",
    "summarize",
    "summarize_columns",
]

#: Fewer distinct clusters than this and the items are resampled instead of the clusters.
MIN_CLUSTERS = 10


class Aggregation(str, Enum):
    """How per-item values become a run figure."""

    MEAN = "mean"  # mean with a bootstrap interval
    RATE = "rate"  # share of 1s among 0/1 values, Wilson interval (on n / deff with clusters)
    SUM = "sum"  # run total (a count that must stay at 0, for instance)
    QUANTILES = "quantiles"  # P50 and P95 with bootstrap intervals


@dataclass(frozen=True)
class Interval:
    """An interval (``None`` bounds for a sum; NaN with too few items), how it was made (``method``: the
    settings that go into the figure's signature), and a ``warning`` when it deserves one."""

    low: float | None
    high: float | None
    method: Mapping[str, Any]
    warning: str | None = None


@dataclass(frozen=True)
class Summary:
    """One run figure: ``statistic`` is ``mean``, ``rate``, ``sum``, ``p50`` or ``p95``.

    ``n`` counts the items with a defined value; ``n_undefined`` the others, by reason in
    ``undefined_reasons``. ``notes`` counts defined values that came with a note (a list shorter than
    K, an ideal DCG of 0, a label derived rather than given). ``ci_low``/``ci_high`` are ``None`` for
    sums and NaN when too few items. ``family`` is the metric's family and ``five_point`` says the
    value is a ratio that seed 002 also shows on its 1–5 scale (1 + 4·ratio). ``warning`` says why the
    interval deserves caution, when it does.
    """

    metric: str
    statistic: str
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int
    n_undefined: int
    undefined_reasons: Mapping[str, int]
    signature: Signature
    notes: Mapping[str, int] = field(default_factory=dict)
    family: str = ""
    five_point: bool = False
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "metric": self.metric,
            "family": self.family,
            "statistic": self.statistic,
            "value": json_number(self.value),
            "ci_low": json_number(self.ci_low),
            "ci_high": json_number(self.ci_high),
            "n": self.n,
            "n_undefined": self.n_undefined,
            "undefined_reasons": dict(self.undefined_reasons),
            "notes": dict(self.notes),
            "signature": self.signature.render(),
        }
        if self.warning is not None:
            data["warning"] = self.warning
        return data


def cluster_labels(conversations: Sequence[str | None], model_ids: Sequence[str | None]) -> list[str] | None:
    """One resampling unit per item: its conversation within its answering system (items of two models
    never share a unit), or the item alone when it has no conversation. ``None`` when no two items share
    a unit, so plain item resampling applies."""
    if conversations.count(None) == len(conversations):
        return None
    labels = [
        f"{model or ''}\x1f{conversation}" if conversation is not None else f"\x1e{i}"
        for i, (conversation, model) in enumerate(zip(conversations, model_ids, strict=True))
    ]
    return labels if len(set(labels)) < len(labels) else None


@dataclass(frozen=True)
class Column:
    """One metric's per-item values (NaN where undefined; ``undefined`` and ``notes`` by item index) with what
    its figures carry: the metric's signature, family and 1–5 display."""

    metric: str
    aggregation: Aggregation
    values: np.ndarray
    undefined: Mapping[int, str]
    signature: Signature
    notes: Mapping[int, str] = field(default_factory=dict)
    family: str = ""
    five_point: bool = False


@dataclass(frozen=True)
class _Plan:
    """How a mean's bootstrap interval is made: over which clusters (``None``: items)."""

    clusters: Sequence[str] | None
    method: Mapping[str, Any]
    warning: str | None


def _plan(settings: Settings, clusters: Sequence[str] | None) -> _Plan:
    method: dict[str, Any] = {
        "confidence": settings.confidence,
        "ci": settings.ci_method,
        "n_resamples": settings.n_resamples,
        "seed": settings.seed,
    }
    warning = None
    if clusters is not None:
        n_clusters = len(set(clusters))
        if n_clusters >= MIN_CLUSTERS:
            method["resample"] = "clusters"
        else:
            clusters = None
            method["resample"] = f"items({n_clusters}<{MIN_CLUSTERS} clusters)"
            warning = (
                f"only {n_clusters} conversation(s): the interval resamples items, as if they were "
                "independent, and is too narrow if turns of a conversation go together"
            )
    return _Plan(clusters, method, warning)


def _rate_interval(values: np.ndarray, settings: Settings, clusters: Sequence[str] | None) -> Interval:
    """Wilson's interval, on n / deff when items share clusters; the signature says which, and gives deff
    with why it is the worst case when it is not estimated."""
    if clusters is None or len(set(clusters)) == len(clusters):
        return Interval(
            *wilson_interval(int(values.sum()), len(values), confidence=settings.confidence),
            {"confidence": settings.confidence, "ci": "wilson"},
        )
    made = wilson_deff_interval(values, clusters, confidence=settings.confidence, min_clusters=MIN_CLUSTERS)
    n_clusters = len(set(clusters))
    deff = f"{made.deff:.2f}"
    warning = None
    if n_clusters < MIN_CLUSTERS:
        deff += f"(worst case, {n_clusters}<{MIN_CLUSTERS} clusters)"
        warning = (
            f"only {n_clusters} conversation(s): too few to estimate how alike a conversation's turns "
            f"are, so the rate's interval takes them as all alike (design effect {made.deff:.2f})"
        )
    elif not made.estimated:
        deff += "(worst case, all values equal)"
    return Interval(
        made.low,
        made.high,
        {"confidence": settings.confidence, "ci": "wilson-deff", "clusters": n_clusters, "deff": deff},
        warning,
    )


def interval(
    values: np.ndarray,
    aggregation: Aggregation,
    *,
    settings: Settings,
    clusters: Sequence[str] | None = None,
    quantile: float | None = None,
) -> Interval:
    """The interval of one figure of the defined ``values`` (``clusters``: one label per value, or
    ``None``); ``quantile`` (50, 95) for :attr:`Aggregation.QUANTILES`."""
    if aggregation is Aggregation.SUM:
        return Interval(None, None, {"ci": "none", "confidence": settings.confidence})
    if aggregation is Aggregation.QUANTILES:
        if quantile is None:
            raise ValueError("a quantile figure needs its quantile")
        low, high = bootstrap_quantile_interval(
            values, quantile, n_resamples=settings.n_resamples, confidence=settings.confidence, seed=settings.seed
        )
        return Interval(
            low,
            high,
            {
                "ci": "percentile-items",
                "confidence": settings.confidence,
                "n_resamples": settings.n_resamples,
                "seed": settings.seed,
            },
        )
    if aggregation is Aggregation.RATE:
        return _rate_interval(values, settings, clusters)
    plan = _plan(settings, clusters)
    low, high = bootstrap_mean_interval(
        values,
        clusters=plan.clusters,
        n_resamples=settings.n_resamples,
        method=settings.ci_method,
        confidence=settings.confidence,
        seed=settings.seed,
    )
    return Interval(low, high, plan.method, plan.warning)


def summarize(column: Column, *, settings: Settings, clusters: Sequence[str] | None = None) -> list[Summary]:
    """Run figures of one metric: one figure, or P50 and P95 for quantiles."""
    return summarize_columns([column], settings=settings, clusters=clusters)


def summarize_columns(
    columns: Sequence[Column], *, settings: Settings, clusters: Sequence[str] | None = None
) -> list[Summary]:
    """Run figures of every column, in order (``clusters``: one label per item, or ``None``). The means of
    columns defined on the same items share one set of bootstrap draws (:func:`bootstrap_mean_intervals`);
    each interval equals the one the column would get alone."""
    masks = [~np.isnan(column.values) for column in columns]
    means: dict[int, Interval] = {}
    groups: dict[tuple[bytes, bool], list[int]] = {}
    plans: dict[int, _Plan] = {}
    for index, (column, defined) in enumerate(zip(columns, masks, strict=True)):
        if column.aggregation not in (Aggregation.MEAN, Aggregation.RATE):
            continue
        kept = None if clusters is None else [c for c, keep in zip(clusters, defined, strict=True) if keep]
        if column.aggregation is Aggregation.RATE:
            means[index] = _rate_interval(column.values[defined], settings, kept)
        else:
            plan = plans[index] = _plan(settings, kept)
            groups.setdefault((np.packbits(defined).tobytes(), plan.clusters is not None), []).append(index)
    for members in groups.values():
        shared = plans[members[0]].clusters
        bounds = bootstrap_mean_intervals(
            [columns[i].values[masks[i]] for i in members],
            clusters=shared,
            n_resamples=settings.n_resamples,
            method=settings.ci_method,
            confidence=settings.confidence,
            seed=settings.seed,
        )
        for i, (low, high) in zip(members, bounds, strict=True):
            means[i] = Interval(low, high, plans[i].method, plans[i].warning)
    summaries = []
    for index, (column, defined) in enumerate(zip(columns, masks, strict=True)):
        summaries += _figures(column, defined, means.get(index), settings)
    return summaries


def _figures(column: Column, defined: np.ndarray, mean_interval: Interval | None, settings: Settings) -> list[Summary]:
    data = column.values[defined]
    common: dict[str, Any] = {
        "n": int(defined.sum()),
        "n_undefined": int((~defined).sum()),
        "undefined_reasons": dict(Counter(column.undefined.values())),
        "notes": dict(Counter(column.notes.values())),
        "family": column.family,
        "five_point": column.five_point,
    }
    signature = column.signature

    def figure(statistic: str, value: float, made: Interval) -> Summary:
        return Summary(
            column.metric,
            statistic,
            value,
            made.low,
            made.high,
            signature=Signature(signature.metric, {**signature.settings, **made.method}, signature.version),
            warning=made.warning,
            **common,
        )

    if column.aggregation is Aggregation.SUM:
        return [figure("sum", float(data.sum()), interval(data, column.aggregation, settings=settings))]
    if column.aggregation is Aggregation.QUANTILES:
        return [
            figure(
                f"p{q}",
                float(np.percentile(data, q)) if len(data) else math.nan,
                interval(data, column.aggregation, settings=settings, quantile=q),
            )
            for q in (50, 95)
        ]
    assert mean_interval is not None  # every mean and rate got one above
    mean = float(data.mean()) if len(data) else math.nan
    return [figure("rate" if column.aggregation is Aggregation.RATE else "mean", mean, mean_interval)]
