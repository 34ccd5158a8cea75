"""The outcome of a run: the per-item table first, and run figures computed from it."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ragmeter.errors import ConfigError, MissingDependencyError
from ragmeter.metrics import Aggregation, Metric
from ragmeter.scoring import Settings
from ragmeter.signature import Signature
from ragmeter.stats.intervals import bootstrap_mean_interval, bootstrap_quantile_interval, wilson_interval

__all__ = ["EvalResult", "Summary", "summarize"]


@dataclass(frozen=True)
class Summary:
    """One run figure: ``statistic`` is ``mean``, ``rate``, ``sum``, ``p50`` or ``p95``.

    ``n`` counts the items with a defined value; ``n_undefined`` the others, by reason in
    ``undefined_reasons``. ``ci_low``/``ci_high`` are ``None`` for sums and NaN when too few items.
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

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "statistic": self.statistic, "value": _json_float(self.value),
                "ci_low": _json_float(self.ci_low), "ci_high": _json_float(self.ci_high), "n": self.n,
                "n_undefined": self.n_undefined, "undefined_reasons": dict(self.undefined_reasons),
                "signature": self.signature.render()}


def _json_float(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _interval_signature(metric: Signature, settings: Settings, how: str) -> Signature:
    extra = {"ci": how, "confidence": settings.confidence}
    if how != "wilson" and how != "none":
        extra.update(n_resamples=settings.n_resamples, seed=settings.seed)
    return Signature(metric.metric, {**metric.settings, **extra}, metric.version)


def summarize(metric: Metric, values: np.ndarray, undefined: Mapping[int, str], *, clusters: Sequence[object] | None,
              settings: Settings, signature: Signature) -> list[Summary]:
    """Run figures of one metric from its per-item values (NaN where undefined)."""
    defined = ~np.isnan(values)
    data = values[defined]
    kept_clusters = None if clusters is None else [c for c, keep in zip(clusters, defined) if keep]
    reasons = dict(Counter(undefined.values()))
    common = {"n": int(defined.sum()), "n_undefined": int((~defined).sum()), "undefined_reasons": reasons}
    nan = math.nan
    if metric.aggregation is Aggregation.SUM:
        return [Summary(metric.name, "sum", float(data.sum()), None, None,
                        signature=_interval_signature(signature, settings, "none"), **common)]
    if metric.aggregation is Aggregation.QUANTILES:
        out = []
        for q in (50, 95):
            value = float(np.percentile(data, q)) if len(data) else nan
            low, high = bootstrap_quantile_interval(data, q, n_resamples=settings.n_resamples,
                                                    confidence=settings.confidence, seed=settings.seed)
            out.append(Summary(metric.name, f"p{q}", value, low, high,
                               signature=_interval_signature(signature, settings, "percentile-items"), **common))
        return out
    value = float(data.mean()) if len(data) else nan
    if metric.aggregation is Aggregation.RATE and kept_clusters is None:
        low, high = wilson_interval(int(data.sum()), len(data), confidence=settings.confidence)
        return [Summary(metric.name, "rate", value, low, high,
                        signature=_interval_signature(signature, settings, "wilson"), **common)]
    low, high = bootstrap_mean_interval(data, clusters=kept_clusters, n_resamples=settings.n_resamples,
                                        method=settings.ci_method, confidence=settings.confidence,
                                        seed=settings.seed)
    how = settings.ci_method + ("-clusters" if kept_clusters is not None else "")
    statistic = "rate" if metric.aggregation is Aggregation.RATE else "mean"
    return [Summary(metric.name, statistic, value, low, high,
                    signature=_interval_signature(signature, settings, how), **common)]


@dataclass(frozen=True)
class EvalResult:
    """Per-item scores (``scores[metric][i]`` for ``item_ids[i]``, NaN where undefined, with the
    reason in ``undefined[metric][i]``) and the run figures computed from them."""

    item_ids: tuple[str, ...]
    scores: Mapping[str, np.ndarray]
    undefined: Mapping[str, Mapping[int, str]]
    summaries: tuple[Summary, ...]
    signatures: Mapping[str, Signature]
    settings: Settings

    @property
    def metrics(self) -> list[str]:
        return list(self.scores)

    def __len__(self) -> int:
        return len(self.item_ids)

    def summary(self, metric: str, statistic: str | None = None) -> Summary:
        """The run figure of ``metric`` (``statistic`` picks ``p50``/``p95`` for quantile metrics)."""
        for s in self.summaries:
            if s.metric == metric and (statistic is None or s.statistic == statistic):
                return s
        raise ConfigError(f"no summary for metric {metric!r}"
                          + (f" with statistic {statistic!r}" if statistic else "")
                          + f"; this result has {', '.join(self.metrics)}")

    def items(self) -> Iterator[dict[str, Any]]:
        """One dict per item: ``id``, each metric's value (``None`` if undefined), and ``undefined``."""
        for i, item_id in enumerate(self.item_ids):
            yield item_row(item_id, {m: float(v[i]) for m, v in self.scores.items()},
                           {m: r[i] for m, r in self.undefined.items() if i in r})

    def to_pandas(self) -> Any:
        """The per-item table as a ``pandas.DataFrame`` indexed by item id (NaN where undefined)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError("pandas", "pandas", "EvalResult.to_pandas()") from exc
        return pd.DataFrame({m: np.asarray(v) for m, v in self.scores.items()},
                            index=pd.Index(self.item_ids, name="id"))

    def to_dict(self) -> dict[str, Any]:
        """The run figures and signatures as plain JSON-ready data (items are written separately)."""
        return {"n_items": len(self), "summaries": [s.to_dict() for s in self.summaries],
                "signatures": {m: s.render() for m, s in self.signatures.items()}}


def item_row(item_id: str, values: Mapping[str, float], undefined: Mapping[str, str]) -> dict[str, Any]:
    """The JSON shape of one item's scores, as written to ``items.jsonl``."""
    return {"id": item_id, "scores": {m: _json_float(v) for m, v in values.items()},
            "undefined": dict(undefined)}
