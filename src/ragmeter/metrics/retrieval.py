"""Retrieval metrics of seed 003: how relevant, sufficient, safe and well ranked the top-K chunks are.

Notation (seed 003): query i, rank k = 1…K, chunk labels t_ik (``topically_relevant``), s_ik
(``evidence_sufficient``) and m_ik (``misleading``), each 0 or 1. The per-query functions below take the
labels of the retrieved chunks in rank order and the cutoff K; the run figure is their mean over queries.

Edge cases (SPEC §4): ranks past the end of a short list count as 0 and the rate denominators stay K, as
trec_eval's P_k; an empty list scores 0 everywhere. The metric wrappers note both in the report. A chunk
in the top K without the label a metric reads, or whose annotators tied on it, leaves the query
undefined for that metric.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Mapping, Sequence

from ragmeter.metrics._registry import Aggregation, Metric, Noted, Outcome, Undefined, register_cutoff
from ragmeter.records import Record
from ragmeter.scoring import ItemContext, RunContext

__all__ = ["dcg", "grade", "misleading_context_rate", "ndcg", "reciprocal_rank", "sufficiency_hit",
           "sufficiency_rate", "topical_precision"]


def topical_precision(t: Sequence[int], k: int) -> float:
    """TopicalPrecision@K(i) = (1/K) · Σ_{k=1..K} t_ik, the share of the top K that is on topic.

    >>> topical_precision([0, 1, 1], 5)
    0.4
    """
    return sum(t[:k]) / k


def sufficiency_hit(s: Sequence[int], k: int) -> float:
    """SufficiencyHit@K(i) = [Σ_{k=1..K} s_ik ≥ 1]: 1 when some top-K chunk alone suffices to answer.

    >>> sufficiency_hit([0, 0, 1], 2), sufficiency_hit([0, 0, 1], 3)
    (0.0, 1.0)
    """
    return float(any(s[:k]))


def sufficiency_rate(s: Sequence[int], k: int) -> float:
    """SufficiencyRate@K(i) = (1/K) · Σ_{k=1..K} s_ik, the share of the top K that suffices alone."""
    return sum(s[:k]) / k


def misleading_context_rate(m: Sequence[int], k: int) -> float:
    """MisleadingContextRate@K(i) = (1/K) · Σ_{k=1..K} m_ik, the share of the top K that would mislead
    (lower is better)."""
    return sum(m[:k]) / k


def reciprocal_rank(t: Sequence[int], k: int) -> float:
    """RR@K(i) = 1/k*_i with k*_i = min{k ≤ K : t_ik = 1}, or 0 when no top-K chunk is on topic.

    >>> reciprocal_rank([0, 0, 1], 5), reciprocal_rank([0, 0, 1], 2)
    (0.3333333333333333, 0.0)
    """
    for rank, relevant in enumerate(t[:k], start=1):
        if relevant:
            return 1.0 / rank
    return 0.0


def grade(topical: int, sufficient: int) -> int:
    """w_ik = 2 if s_ik = 1, 1 if only t_ik = 1, else 0."""
    return 2 if sufficient else 1 if topical else 0


def dcg(grades: Sequence[int], k: int, *, gain: str = "exponential") -> float:
    """DCG@K = Σ_{k=1..K} g(w_k) / log2(k + 1), with g(w) = 2^w − 1 (``exponential``, seed 003) or
    g(w) = w (``linear``, trec_eval's default)."""
    exponential = _gain_is_exponential(gain)
    return sum(((2 ** w - 1) if exponential else w) / math.log2(rank + 1)
               for rank, w in enumerate(grades[:k], start=1))


def ndcg(grades: Sequence[int], k: int, *, ideal: Sequence[int] | None = None,
         gain: str = "exponential") -> float | None:
    """NDCG@K(i) = DCG@K(i) / IDCG@K(i), where IDCG is the DCG of the ideal ranking: the grades in
    ``ideal`` (the query's judged pool, as trec_eval) or, when ``ideal`` is ``None``, the retrieved
    ``grades`` themselves, sorted from best to worst.

    Returns ``None`` when IDCG is 0 (nothing relevant to rank); the metric scores such a query 0 and
    notes it, as trec_eval does.

    >>> round(ndcg([0, 2, 1, 0, 1], 5), 4)
    0.6729
    >>> ndcg([0, 0], 5) is None
    True
    """
    best = sorted(grades if ideal is None else ideal, reverse=True)
    ideal_dcg = dcg(best, k, gain=gain)
    if ideal_dcg == 0:
        return None
    return dcg(grades, k, gain=gain) / ideal_dcg


def _gain_is_exponential(gain: str) -> bool:
    if gain not in ("exponential", "linear"):
        raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")
    return gain == "exponential"


# ---------------------------------------------------------------------------------------------------
# Registration: reading labels off a record, with the undefined and noted cases.

_GRADE_LABELS = ("topically_relevant", "evidence_sufficient")


def _ranked(record: Record, item: ItemContext, name: str, k: int) -> list[int] | Undefined:
    """The label ``name`` of the top-``k`` chunks in rank order, or why it cannot be read."""
    def read() -> list[int] | Undefined:
        values = []
        for rank, chunk in enumerate(record.contexts[:k], start=1):
            if name not in chunk.labels:
                return Undefined(f"chunk at rank {rank} has no {name} label")
            value = chunk.labels[name]
            if value is None:
                return Undefined(f"annotators tied on {name} at rank {rank}")
            values.append(int(value))
        return values
    return item.memo(f"retrieval:{name}@{k}", read)


def _note(record: Record, k: int, value: float, *, short: str | None) -> Outcome:
    """``value`` with a note for an empty list, and for a list shorter than k when ``short`` says how
    (``"denominator"`` for the rates that still divide by k, ``"plain"``), else as it is."""
    if not record.contexts:
        return Noted(value, "no chunks retrieved (scored 0)")
    if short is not None and len(record.contexts) < k:
        why = f" (the denominator stays {k})" if short == "denominator" else ""
        return Noted(value, f"fewer than {k} chunks retrieved{why}")
    return value


def _label_metric(base: str, description: str, label: str, fn: object, *, higher_is_better: bool,
                  aggregation: Aggregation = Aggregation.MEAN, divides_by_k: bool = True) -> None:
    @cache
    def build(k: int) -> Metric:
        def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
            labels = _ranked(record, item, label, k)
            if isinstance(labels, Undefined):
                return labels
            return _note(record, k, fn(labels, k), short="denominator" if divides_by_k else None)  # type: ignore[operator]
        return Metric(name=f"{base}@{k}", family="retrieval", description=description.replace("K", str(k)),
                      needs=("chunk_labels",), aggregation=aggregation, value_range=(0.0, 1.0),
                      higher_is_better=higher_is_better, compute=compute)
    register_cutoff(base, "retrieval", build)


_label_metric("topical_precision", "Share of the top K chunks labelled topically_relevant (÷K).",
              "topically_relevant", topical_precision, higher_is_better=True)
_label_metric("sufficiency_hit", "Some top-K chunk is labelled evidence_sufficient; a rate.",
              "evidence_sufficient", sufficiency_hit, higher_is_better=True, aggregation=Aggregation.RATE,
              divides_by_k=False)
_label_metric("sufficiency_rate", "Share of the top K chunks labelled evidence_sufficient (÷K).",
              "evidence_sufficient", sufficiency_rate, higher_is_better=True)
_label_metric("misleading_context_rate", "Share of the top K chunks labelled misleading (÷K); lower is better.",
              "misleading", misleading_context_rate, higher_is_better=False)
_label_metric("mrr", "Reciprocal rank of the first topically_relevant chunk in the top K (0 if none).",
              "topically_relevant", reciprocal_rank, higher_is_better=True, divides_by_k=False)


def _grades(record: Record, k: int, qrels: Mapping[str, int] | None) -> list[int] | Undefined:
    """w_ik of the top-k chunks. With ``qrels`` (ideal=pool) a judged doc_id takes its qrels grade, as in
    trec_eval, and counts once (at its best rank); an unjudged chunk takes its own labels, or 0 when it has
    none (trec_eval's unjudged = not relevant)."""
    seen: set[str] = set()
    grades = []
    for rank, chunk in enumerate(record.contexts[:k], start=1):
        if qrels is not None and chunk.doc_id in qrels:
            grades.append(0 if chunk.doc_id in seen else qrels[chunk.doc_id])
            seen.add(chunk.doc_id)
            continue
        missing = [name for name in _GRADE_LABELS if name not in chunk.labels]
        if missing and qrels is not None:
            grades.append(0)
            continue
        if missing:
            return Undefined(f"chunk at rank {rank} has no {missing[0]} label")
        tied = [name for name in _GRADE_LABELS if chunk.labels[name] is None]
        if tied:
            return Undefined(f"annotators tied on {tied[0]} at rank {rank}")
        grades.append(grade(*(int(chunk.labels[name]) for name in _GRADE_LABELS)))
    return grades


@cache
def _ndcg_metric(k: int) -> Metric:
    def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
        settings = run.settings
        qrels = None
        if settings.ndcg_ideal == "pool":
            if record.qrels is None:
                return Undefined("ideal=pool needs the record's qrels (its judged pool); it has none")
            qrels = record.qrels
        grades = _grades(record, k, qrels)
        if isinstance(grades, Undefined):
            return grades
        ideal = None
        if qrels is not None:  # the judged pool, plus the retrieved chunks it does not judge, graded alike
            ideal = [*qrels.values(),
                     *(w for chunk, w in zip(record.contexts[:k], grades) if chunk.doc_id not in qrels)]
        value = ndcg(grades, k, ideal=ideal, gain=settings.ndcg_gain)
        if value is None:
            note = "no chunks retrieved" if not record.contexts and qrels is None else "nothing relevant"
            return Noted(0.0, f"ideal DCG is 0: {note} (scored 0, as trec_eval)")
        return _note(record, k, value, short="plain")

    return Metric(name=f"ndcg@{k}", family="retrieval",
                  description=f"DCG@{k} of grades w (2 sufficient, 1 topical, 0) over the ideal DCG@{k}.",
                  needs=("chunk_labels",), aggregation=Aggregation.MEAN, value_range=(0.0, 1.0),
                  higher_is_better=True, compute=compute, settings=("ideal", "gain"))


register_cutoff("ndcg", "retrieval", _ndcg_metric)
