"""The registry that knows every metric: what it needs, how it aggregates, what it depends on.

A metric is a pure per-item function wrapped in a :class:`Metric` that tells the run loop
- which record fields it needs (``needs``); a record lacking one gets an *undefined* score with the
  reason, counted in the report, and the function is not called;
- which run-wide resources it uses (``resources``: ``"embedder"`` now, judges later); a metric with
  resources is *expensive*: the run loop loads them once and lets the metric prefetch its inputs
  for a whole batch (``prefetch``) before scoring items one by one;
- how its per-item values aggregate (``aggregation``) and which settings change its value
  (``settings``), which go into its signature.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable, Iterable

from ragmeter.errors import ConfigError
from ragmeter.records import Record

if TYPE_CHECKING:
    from ragmeter.scoring import ItemContext, RunContext

__all__ = ["DEFAULT_FAMILIES", "Aggregation", "Metric", "get_metric", "list_metrics", "register",
           "resolve_metrics"]


class Aggregation(str, Enum):
    """How per-item values become a run figure."""

    MEAN = "mean"            # mean with a bootstrap interval
    RATE = "rate"            # share of 1s among 0/1 values, Wilson interval
    SUM = "sum"              # run total (a count that must stay at 0, for instance)
    QUANTILES = "quantiles"  # P50 and P95 with bootstrap intervals


FIELD_CHECKS: dict[str, tuple[Callable[[Record], bool], str]] = {
    "references": (lambda r: len(r.references) > 0, "record has no reference answer"),
    "contexts": (lambda r: len(r.contexts) > 0, "record has no retrieved chunks"),
    "usage": (lambda r: r.usage is not None, "record has no token usage"),
    "latency_ms": (lambda r: r.latency_ms is not None, "record has no latency_ms"),
    "answer": (lambda r: True, ""),
    "answerability": (lambda r: True, ""),
}


@dataclass(frozen=True)
class Metric:
    """A registered metric. ``compute(record, item, run)`` returns the item's float value."""

    name: str
    family: str
    description: str
    needs: tuple[str, ...]
    aggregation: Aggregation
    value_range: tuple[float, float | None]
    higher_is_better: bool | None
    compute: Callable[[Record, ItemContext, RunContext], float]
    settings: tuple[str, ...] = ()
    resources: frozenset[str] = frozenset()
    prefetch: Callable[[Record, ItemContext, RunContext], Iterable[str]] | None = None

    def __post_init__(self) -> None:
        unknown = [need for need in self.needs if need not in FIELD_CHECKS]
        if unknown:
            raise ConfigError(f"metric {self.name!r} needs unknown record fields {unknown}")

    @property
    def expensive(self) -> bool:
        return bool(self.resources)

    def missing_field(self, record: Record) -> str | None:
        """The reason this record cannot be scored, or ``None`` when it can."""
        for need in self.needs:
            present, reason = FIELD_CHECKS[need]
            if not present(record):
                return reason
        return None


_REGISTRY: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add a metric; names are unique."""
    if metric.name in _REGISTRY:
        raise ConfigError(f"a metric named {metric.name!r} is already registered")
    _REGISTRY[metric.name] = metric
    return metric


def get_metric(name: str) -> Metric:
    """The metric called ``name``; an unknown name raises :class:`ConfigError` with suggestions."""
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"unknown metric {name!r}.{hint} 'ragmeter metrics' lists them all.") from None


def list_metrics(family: str | None = None) -> list[Metric]:
    """Registered metrics in registration order, optionally of one family."""
    return [m for m in _REGISTRY.values() if family is None or m.family == family]


#: What ``ragmeter run`` scores when no metric is named: the seeds 000/001 report.
DEFAULT_FAMILIES = ("citation", "lexical", "efficiency")


def resolve_metrics(names: Iterable[str] | None) -> list[Metric]:
    """Metrics for the given names, where a family name (``mtrag``) stands for all its metrics;
    ``None`` gives the default families. Duplicates are removed, order kept."""
    if names is None:
        names = DEFAULT_FAMILIES
    families = {m.family for m in _REGISTRY.values()}
    chosen: dict[str, Metric] = {}
    for name in (n.strip() for n in names):
        if not name:
            continue
        for metric in list_metrics(name) if name in families else [get_metric(name)]:
            chosen.setdefault(metric.name, metric)
    if not chosen:
        raise ConfigError("no metric selected: name at least one (see 'ragmeter metrics')")
    return list(chosen.values())
