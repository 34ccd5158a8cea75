"""The outcome of a run: the per-item table first, and run figures computed from it."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from ragmeter.errors import ConfigError, MissingDependencyError
from ragmeter.metrics import Aggregation, Metric
from ragmeter.scoring import Settings
from ragmeter.signature import Signature
from ragmeter.stats.intervals import bootstrap_mean_interval, bootstrap_quantile_interval, wilson_interval

if TYPE_CHECKING:
    from ragmeter.judges import Judge, JudgeUsage
    from ragmeter.records import Record
    from ragmeter.scoring import ItemJudging

__all__ = ["EvalResult", "JudgingReport", "Summary", "summarize"]


@dataclass(frozen=True)
class Summary:
    """One run figure: ``statistic`` is ``mean``, ``rate``, ``sum``, ``p50`` or ``p95``.

    ``n`` counts the items with a defined value; ``n_undefined`` the others, by reason in
    ``undefined_reasons``. ``notes`` counts defined values that came with a note (a list shorter than
    K, an ideal DCG of 0, a label derived rather than given). ``ci_low``/``ci_high`` are ``None`` for
    sums and NaN when too few items.
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

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "statistic": self.statistic, "value": _json_float(self.value),
                "ci_low": _json_float(self.ci_low), "ci_high": _json_float(self.ci_high), "n": self.n,
                "n_undefined": self.n_undefined, "undefined_reasons": dict(self.undefined_reasons),
                "notes": dict(self.notes), "signature": self.signature.render()}


def _json_float(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _interval_signature(metric: Signature, settings: Settings, how: str) -> Signature:
    extra = {"ci": how, "confidence": settings.confidence}
    if how != "wilson" and how != "none":
        extra.update(n_resamples=settings.n_resamples, seed=settings.seed)
    return Signature(metric.metric, {**metric.settings, **extra}, metric.version)


def summarize(metric: Metric, values: np.ndarray, undefined: Mapping[int, str], *, clusters: Sequence[object] | None,
              settings: Settings, signature: Signature, notes: Mapping[int, str] | None = None) -> list[Summary]:
    """Run figures of one metric from its per-item values (NaN where undefined; ``notes`` by item)."""
    defined = ~np.isnan(values)
    data = values[defined]
    kept_clusters = None if clusters is None else [c for c, keep in zip(clusters, defined, strict=True) if keep]
    reasons = dict(Counter(undefined.values()))
    noted = dict(Counter((notes or {}).values()))

    def make(statistic: str, value: float, interval: tuple[float, float] | None, how: str) -> Summary:
        low, high = interval if interval is not None else (None, None)
        return Summary(metric.name, statistic, value, low, high, n=int(defined.sum()),
                       n_undefined=int((~defined).sum()), undefined_reasons=reasons,
                       signature=_interval_signature(signature, settings, how), notes=noted)

    if metric.aggregation is Aggregation.SUM:
        return [make("sum", float(data.sum()), None, "none")]
    if metric.aggregation is Aggregation.QUANTILES:
        return [make(f"p{q}", float(np.percentile(data, q)) if len(data) else math.nan,
                     bootstrap_quantile_interval(data, q, n_resamples=settings.n_resamples,
                                                 confidence=settings.confidence, seed=settings.seed),
                     "percentile-items")
                for q in (50, 95)]
    mean = float(data.mean()) if len(data) else math.nan
    if metric.aggregation is Aggregation.RATE and kept_clusters is None:
        return [make("rate", mean, wilson_interval(int(data.sum()), len(data), confidence=settings.confidence),
                     "wilson")]
    interval = bootstrap_mean_interval(data, clusters=kept_clusters, n_resamples=settings.n_resamples,
                                       method=settings.ci_method, confidence=settings.confidence, seed=settings.seed)
    how = settings.ci_method + ("-clusters" if kept_clusters is not None else "")
    return [make("rate" if metric.aggregation is Aggregation.RATE else "mean", mean, interval, how)]


@dataclass(frozen=True)
class JudgingReport:
    """What the judge did in a run: ``usage`` by prompt (calls, cache hits, requests, retries, repairs,
    failures, tokens), the tokens each item cost this run (0 where cached), and every failed call as
    ``{"id", "prompt", "reason", "raw"}`` (``raw``: the last reply, when there was one)."""

    judge: str
    usage: Mapping[str, JudgeUsage]
    prompt_tokens: np.ndarray
    completion_tokens: np.ndarray
    failures: tuple[Mapping[str, Any], ...]

    def totals(self) -> dict[str, int]:
        """Sums over prompts of every usage counter."""
        keys = ("calls", "cached", "requests", "retries", "repairs", "failures", "prompt_tokens",
                "completion_tokens", "cached_prompt_tokens", "cached_completion_tokens")
        return {k: sum(getattr(u, k) for u in self.usage.values()) for k in keys}

    def cost(self, prompt_price: float, completion_price: float) -> float:
        """This run's spend at the given prices per million prompt and completion tokens."""
        totals = self.totals()
        return (totals["prompt_tokens"] * prompt_price + totals["completion_tokens"] * completion_price) / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "totals": self.totals(),
                "by_prompt": {name: u.to_dict() for name, u in self.usage.items()},
                "failures": len(self.failures)}


class JudgingLog:
    """Collects, batch by batch, what judging each item cost and which calls failed."""

    def __init__(self) -> None:
        self.prompt_tokens: list[int] = []
        self.completion_tokens: list[int] = []
        self.failures: list[dict[str, Any]] = []

    def add(self, batch: Sequence[Record], costs: Sequence[ItemJudging]) -> None:
        for record, cost in zip(batch, costs, strict=True):
            self.prompt_tokens.append(cost.prompt_tokens)
            self.completion_tokens.append(cost.completion_tokens)
            self.failures.extend({"id": record.id, "prompt": prompt, "reason": reason, "raw": raw}
                                 for prompt, reason, raw in cost.failures)

    def report(self, judge: Judge) -> JudgingReport:
        import copy

        return JudgingReport(judge.identity, copy.deepcopy(judge.usage),
                             np.asarray(self.prompt_tokens, dtype=np.int64),
                             np.asarray(self.completion_tokens, dtype=np.int64), tuple(self.failures))


@dataclass(frozen=True)
class EvalResult:
    """Per-item scores (``scores[metric][i]`` for ``item_ids[i]``, NaN where undefined, with the
    reason in ``undefined[metric][i]``) and the run figures computed from them. ``model_ids[i]`` names
    the answering system when the input mixes several (MT-RAG files do), else ``None``. ``notes[metric][i]``
    is the note that came with a defined value, where there was one. ``judging`` tells what the judge
    did, when the run had one."""

    item_ids: tuple[str, ...]
    model_ids: tuple[str | None, ...]
    scores: Mapping[str, np.ndarray]
    undefined: Mapping[str, Mapping[int, str]]
    summaries: tuple[Summary, ...]
    signatures: Mapping[str, Signature]
    settings: Settings
    notes: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    judging: JudgingReport | None = None

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
        """One dict per item: ``id``, each metric's value (``None`` if undefined), ``undefined`` and,
        where a value came with one, ``notes``."""
        for i, (item_id, model_id) in enumerate(zip(self.item_ids, self.model_ids, strict=True)):
            yield item_row(item_id, model_id, {m: float(v[i]) for m, v in self.scores.items()},
                           {m: r[i] for m, r in self.undefined.items() if i in r},
                           {m: n[i] for m, n in self.notes.items() if i in n}, judge=self._item_judging(i))

    def _item_judging(self, i: int) -> ItemJudging | None:
        if self.judging is None:
            return None
        from ragmeter.scoring import ItemJudging

        failures = tuple((f["prompt"], f["reason"], None) for f in self.judging.failures
                         if f["id"] == self.item_ids[i])
        return ItemJudging(int(self.judging.prompt_tokens[i]), int(self.judging.completion_tokens[i]), failures)

    def to_pandas(self) -> Any:
        """The per-item table as a ``pandas.DataFrame`` indexed by item id (NaN where undefined; a
        ``model_id`` column when the input mixes systems)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError("pandas", "pandas", "EvalResult.to_pandas()") from exc
        columns: dict[str, Any] = {}
        if any(m is not None for m in self.model_ids):
            columns["model_id"] = list(self.model_ids)
        columns.update({m: np.asarray(v) for m, v in self.scores.items()})
        return pd.DataFrame(columns, index=pd.Index(self.item_ids, name="id"))

    def to_dict(self) -> dict[str, Any]:
        """The run figures and signatures as plain JSON-ready data (items are written separately)."""
        data = {"n_items": len(self), "summaries": [s.to_dict() for s in self.summaries],
                "signatures": {m: s.render() for m, s in self.signatures.items()}}
        if self.judging is not None:
            data["judging"] = self.judging.to_dict()
        return data


def item_row(item_id: str, model_id: str | None, values: Mapping[str, float],
             undefined: Mapping[str, str], notes: Mapping[str, str] | None = None, *,
             judge: ItemJudging | None = None) -> dict[str, Any]:
    """The JSON shape of one item's scores, as written to ``items.jsonl``; ``judge``: the item's judge
    tokens this run and its failed calls (prompt and reason; the raw replies go to the failure log)."""
    row: dict[str, Any] = {"id": item_id}
    if model_id is not None:
        row["model_id"] = model_id
    row.update(scores={m: _json_float(v) for m, v in values.items()}, undefined=dict(undefined))
    if notes:
        row["notes"] = dict(notes)
    if judge is not None:
        row["judge"] = {"prompt_tokens": judge.prompt_tokens, "completion_tokens": judge.completion_tokens,
                        "failures": [{"prompt": prompt, "reason": reason} for prompt, reason, _ in judge.failures]}
    return row
