"""The registry that knows every metric: what it needs, how it aggregates, what it depends on.

A metric is a pure per-item function wrapped in a :class:`Metric` that tells the run loop
- which record fields it needs (``needs``); a record lacking one gets an *undefined* score with the
  reason, counted in the report, and the function is not called;
- which run-wide resources it uses (``resources``: ``"embedder"``, ``"token_encoder"``, ``"judge"``); a
  metric with resources is *expensive*: the run loop loads them once and lets the metric prefetch its
  inputs for a whole batch (``prefetch``: texts to embed, or judge calls to make concurrently) before
  scoring items one by one;
- how its per-item values aggregate (``aggregation``; a rate's values must be 0 or 1) and which
  settings change its value: ``signature(run)`` gives them, by name, for its signature.

``compute`` returns a float, or :class:`Undefined` when the record cannot be scored for a reason only
the metric knows (a missing label), or :class:`Noted` for a value that counts but deserves a line in
the report (a list shorter than K, an ideal DCG of 0). ``compute_batch``, where a metric has one,
scores a batch at once (:class:`BatchOutcomes`: a value array with the few undefined and noted items
beside it) and is handed only the records that have every field the metric needs.

Rank metrics take a cutoff in their name, parsed in one place (:func:`parse_cutoff`): ``ndcg@5``.
They are registered as factories (:func:`register_cutoff`); a family name stands for its metrics at
``DEFAULT_CUTOFF`` and ``family@K`` at K (``retrieval@5``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Record
from ragmeter.results.aggregate import Aggregation

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = [
    "DEFAULT_CUTOFF",
    "DEFAULT_FAMILIES",
    "MAX_CUTOFF",
    "Aggregation",
    "BatchOutcomes",
    "Metric",
    "Noted",
    "Outcome",
    "Undefined",
    "get_metric",
    "list_metrics",
    "parse_cutoff",
    "register",
    "register_cutoff",
    "resolve_metrics",
]


@dataclass(frozen=True, slots=True)
class Undefined:
    """A per-item result with no value, and why (counted by reason in the report)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Noted:
    """A value that enters the aggregate, with a note counted in the report."""

    value: float
    note: str


Outcome = float | Undefined | Noted


@dataclass(frozen=True)
class BatchOutcomes:
    """A batch kernel's outcomes for n records: ``values`` (n floats; NaN where undefined), and by position
    the reasons of the undefined ones and the notes of the noted ones (few, so kept apart from the array)."""

    values: np.ndarray
    undefined: Mapping[int, str] = field(default_factory=dict)
    notes: Mapping[int, str] = field(default_factory=dict)

    def outcome(self, index: int) -> Outcome:
        """The outcome of record ``index`` alone."""
        if index in self.undefined:
            return Undefined(self.undefined[index])
        value = float(self.values[index])
        return Noted(value, self.notes[index]) if index in self.notes else value


#: Record field → (is it present?, the reason when not); ``None`` for a field every record has, or
#: one the metric checks itself.
FIELD_CHECKS: dict[str, tuple[Callable[[Record], bool], str] | None] = {
    "references": (lambda r: len(r.references) > 0, "record has no reference answer"),
    "contexts": (lambda r: len(r.contexts) > 0, "record has no retrieved chunks"),
    "usage": (lambda r: r.usage is not None, "record has no token usage"),
    "latency_ms": (lambda r: r.latency_ms is not None, "record has no latency_ms"),
    "answer": None,
    "answerability": None,  # optional: metrics handle an unknown answerability
    "labels": None,  # labels are checked by each metric, which knows the label and the ranks it reads
    "chunk_labels": None,
    "qrels": None,  # recall@K says itself that a record has no qrels
}


def no_settings(run: RunContext) -> Mapping[str, Any]:
    """The signature values of a metric that no setting changes."""
    return {}


@dataclass(frozen=True)
class Metric:
    """A registered metric. ``compute(record, item, run)`` returns the item's :data:`Outcome`;
    ``signature(run)`` the settings that produced it, by name."""

    name: str
    family: str
    description: str
    needs: tuple[str, ...]
    aggregation: Aggregation
    value_range: tuple[float, float | None]
    higher_is_better: bool | None
    compute: Callable[[Record, ItemContext, RunContext], Outcome]
    signature: Callable[[RunContext], Mapping[str, Any]] = no_settings
    resources: frozenset[str] = frozenset()
    prefetch: Callable[[Record, ItemContext, RunContext], Iterable[Any]] | None = None
    #: Scores a whole batch at once (vectorised kernels); gives the same outcomes as ``compute``.
    compute_batch: Callable[[Sequence[Record], list[ItemContext], RunContext], BatchOutcomes] | None = None
    #: A ratio in [0, 1] that seed 002 also shows on its 1–5 scale (1 + 4·ratio).
    five_point: bool = False
    #: How far its values agree with people, as measured on data it was not tuned on (``benchmarks/README.md``);
    #: the report shows it beside the metric's row of the primary table.
    agreement: str | None = None

    def __post_init__(self) -> None:
        unknown = [need for need in self.needs if need not in FIELD_CHECKS]
        if unknown:
            raise ConfigError(f"metric {self.name!r} needs unknown record fields {unknown}")

    @property
    def expensive(self) -> bool:
        return bool(self.resources)

    @property
    def requirements(self) -> tuple[str, ...]:
        """What scoring needs: the record fields, and a judge for judged metrics (``ragmeter metrics``
        and the documentation's metric tables list these)."""
        return (*self.needs, "judge") if "judge" in self.resources else self.needs

    @property
    def checks_fields(self) -> bool:
        """Whether some record may lack a field this metric needs (else :meth:`missing_field` is skipped)."""
        return any(FIELD_CHECKS[need] is not None for need in self.needs)

    def missing_field(self, record: Record) -> str | None:
        """The reason this record cannot be scored, or ``None`` when it can."""
        for need in self.needs:
            check = FIELD_CHECKS[need]
            if check is not None and not check[0](record):
                return check[1]
        return None


#: The cutoff a family name gives its rank metrics (``retrieval`` = ``retrieval@10``).
DEFAULT_CUTOFF = 10
#: The largest cutoff: a batch's labels are read into (items × K) arrays.
MAX_CUTOFF = 1000

_REGISTRY: dict[str, Metric] = {}
_CUTOFF_FACTORIES: dict[str, tuple[str, Callable[[int], Metric]]] = {}


def register(metric: Metric) -> Metric:
    """Add a metric; names are unique."""
    if metric.name in _REGISTRY or metric.name in _CUTOFF_FACTORIES:
        raise ConfigError(f"a metric named {metric.name!r} is already registered")
    _REGISTRY[metric.name] = metric
    return metric


def register_cutoff(base: str, family: str, factory: Callable[[int], Metric]) -> None:
    """Add a rank metric whose name takes a cutoff: ``factory(k)`` builds ``base@k``."""
    if base in _REGISTRY or base in _CUTOFF_FACTORIES:
        raise ConfigError(f"a metric named {base!r} is already registered")
    _CUTOFF_FACTORIES[base] = (family, factory)


def parse_cutoff(name: str) -> tuple[str, int | None]:
    """``"ndcg@5"`` → ``("ndcg", 5)``; ``"ndcg"`` → ``("ndcg", None)``. K must be a whole number from 1
    to :data:`MAX_CUTOFF`."""
    base, at, cutoff = name.partition("@")
    if not at:
        return name, None
    if not (cutoff.isascii() and cutoff.isdigit()) or not 1 <= int(cutoff) <= MAX_CUTOFF:
        raise ConfigError(f"the cutoff in {name!r} must be a whole number from 1 to {MAX_CUTOFF}, as in {base}@10")
    return base, int(cutoff)


def get_metric(name: str) -> Metric:
    """The metric called ``name`` (``ndcg@5`` for rank metrics); an unknown name raises
    :class:`ConfigError` with suggestions."""
    base, cutoff = parse_cutoff(name)
    if base in _CUTOFF_FACTORIES:
        if cutoff is None:
            raise ConfigError(f"{base!r} needs a cutoff: write {base}@K, e.g. {base}@{DEFAULT_CUTOFF}")
        return _CUTOFF_FACTORIES[base][1](cutoff)
    if cutoff is None and name in _REGISTRY:
        return _REGISTRY[name]
    known = [*_REGISTRY, *(f"{b}@{DEFAULT_CUTOFF}" for b in _CUTOFF_FACTORIES)]
    close = difflib.get_close_matches(name, known, n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(f"unknown metric {name!r}.{hint} 'ragmeter metrics' lists them all.")


def list_metrics(family: str | None = None, *, cutoff: int = DEFAULT_CUTOFF) -> list[Metric]:
    """Registered metrics in registration order, optionally of one family; rank metrics at ``cutoff``."""
    metrics = [*_REGISTRY.values(), *(factory(cutoff) for _, factory in _CUTOFF_FACTORIES.values())]
    return [m for m in metrics if family is None or m.family == family]


#: What ``ragmeter run`` scores when no metric is named: the seeds 000/001 report.
DEFAULT_FAMILIES = ("citation", "lexical", "efficiency")


def resolve_metrics(names: Iterable[str] | None) -> list[Metric]:
    """Metrics for the given names, where a family name (``mtrag``, ``retrieval@5``) stands for all its
    metrics; ``None`` gives the default families. Duplicates are removed, order kept."""
    if names is None:
        names = DEFAULT_FAMILIES
    families = {m.family for m in _REGISTRY.values()} | {family for family, _ in _CUTOFF_FACTORIES.values()}
    chosen: dict[str, Metric] = {}
    for name in (n.strip() for n in names):
        if not name:
            continue
        base, cutoff = parse_cutoff(name)
        metrics = list_metrics(base, cutoff=cutoff or DEFAULT_CUTOFF) if base in families else [get_metric(name)]
        for metric in metrics:
            chosen.setdefault(metric.name, metric)
    if not chosen:
        raise ConfigError("no metric selected: name at least one (see 'ragmeter metrics')")
    return list(chosen.values())
