"""Retrieval metrics of seed 003: how relevant, sufficient, safe and well ranked the top-K chunks are.

Notation (seed 003): query i, rank k = 1…K, chunk labels t_ik (``topically_relevant``), s_ik
(``evidence_sufficient``) and m_ik (``misleading``), each 0 or 1. The per-query functions below take the
labels of the retrieved chunks in rank order and the cutoff K; the run figure is their mean over queries.

A chunk with neither the ``topically_relevant`` nor the ``evidence_sufficient`` label whose record carries
``qrels`` (a test set from ``ragmeter generate``, a TREC qrels file given with ``--qrels``) takes both from its
doc_id's grade: topical when w ≥ 1, sufficient when w ≥ 2, neither when the qrels do not judge it (trec_eval's
rule: unjudged is not relevant). ``misleading`` is never derived. :func:`recall` reads the qrels alone.

Edge cases (SPEC §4): ranks past the end of a short list count as 0 and the rate denominators stay K, as
trec_eval's P_k; an empty list scores 0 everywhere. The metric wrappers note both in the report. A chunk
in the top K without the label a metric reads, or whose annotators tied on it, leaves the query
undefined for that metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.core.records import Record
from ragmeter.metrics._registry import Aggregation, BatchOutcomes, Metric, Outcome, register_cutoff
from ragmeter.metrics._retrieval_kernels import RankedLabels, dcg_rows, graded, ranked_labels

if TYPE_CHECKING:
    from ragmeter.engine.context import ItemContext, RunContext

__all__ = [
    "dcg",
    "grade",
    "misleading_context_rate",
    "ndcg",
    "recall",
    "reciprocal_rank",
    "sufficiency_hit",
    "sufficiency_rate",
    "topical_precision",
]


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


def recall(doc_ids: Sequence[str], pool: Mapping[str, int], k: int) -> float | None:
    """Recall@K(i) = |{d in the top K : w_d ≥ 1}| / |{d : w_d ≥ 1}|: the share of the query's relevant judged
    documents (its qrels ``pool``, doc_id → grade w) among the top K retrieved ``doc_ids``, each counted once
    (trec_eval's ``recall_k``). ``None`` when the qrels judge nothing relevant.

    >>> recall(["c", "a", "b"], {"a": 2, "b": 1, "c": 0}, 2)
    0.5
    """
    relevant = {doc for doc, w in pool.items() if w >= 1}
    if not relevant:
        return None
    return len(relevant & set(doc_ids[:k])) / len(relevant)


def grade(topical: int, sufficient: int) -> int:
    """w_ik = 2 if s_ik = 1, 1 if only t_ik = 1, else 0."""
    return 2 if sufficient else 1 if topical else 0


def dcg(grades: Sequence[int], k: int, *, gain: str = "exponential") -> float:
    """DCG@K = Σ_{k=1..K} g(w_k) / log2(k + 1), with g(w) = 2^w − 1 (``exponential``, seed 003) or
    g(w) = w (``linear``, trec_eval's default)."""
    exponential = _gain_is_exponential(gain)
    return sum(((2**w - 1) if exponential else w) / math.log2(rank + 1) for rank, w in enumerate(grades[:k], start=1))


def ndcg(
    grades: Sequence[int], k: int, *, ideal: Sequence[int] | None = None, gain: str = "exponential"
) -> float | None:
    """NDCG@K(i) = DCG@K(i) / IDCG@K(i), where IDCG is the DCG of the ideal ranking: the grades in
    ``ideal`` (the query's judged pool, as trec_eval) or, when ``ideal`` is ``None``, the top-k retrieved
    ``grades`` themselves (seed 003's C_i is the top-K set) sorted from best to worst.

    Returns ``None`` when IDCG is 0 (nothing relevant to rank); the metric scores such a query 0 and
    notes it, as trec_eval does.

    >>> round(ndcg([0, 2, 1, 0, 1], 5), 4)
    0.6729
    >>> ndcg([0, 0], 5) is None
    True
    """
    best = sorted(grades[:k] if ideal is None else ideal, reverse=True)
    ideal_dcg = dcg(best, k, gain=gain)
    if ideal_dcg == 0:
        return None
    return dcg(grades, k, gain=gain) / ideal_dcg


def _gain_is_exponential(gain: str) -> bool:
    if gain not in ("exponential", "linear"):
        raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")
    return gain == "exponential"


# ---------------------------------------------------------------------------------------------------
# Registration: batch kernels (one read of a batch's labels shared by the six metrics), with the
# undefined and noted cases.


def _batch_labels(records: Sequence[Record], run: RunContext, k: int) -> RankedLabels:
    return run.batch_memo(f"retrieval-labels@{k}", lambda: ranked_labels(records, k))


def _outcomes(
    values: np.ndarray,
    problems: Sequence[str | None],
    lengths: np.ndarray,
    k: int,
    *,
    short: str | None,
    zero_ideal: np.ndarray | None = None,
    pool: bool = False,
) -> BatchOutcomes:
    """Per-record outcomes: undefined where a label is missing or tied; noted for an empty list, an
    ideal DCG of 0 and (``short``: ``"denominator"`` or ``"plain"``) a list shorter than k."""
    values = np.array(values, dtype=float)
    notes: dict[int, str] = {}
    flagged = np.flatnonzero((lengths < k) | (zero_ideal if zero_ideal is not None else False))
    for i in flagged.tolist():
        if zero_ideal is not None and zero_ideal[i]:
            what = "no chunks retrieved" if lengths[i] == 0 and not pool else "nothing relevant"
            values[i] = 0.0
            notes[i] = f"ideal DCG is 0: {what} (scored 0, as trec_eval)"
        elif lengths[i] == 0:
            notes[i] = "no chunks retrieved (scored 0)"
        elif short is not None:
            why = f" (the denominator stays {k})" if short == "denominator" else ""
            notes[i] = f"fewer than {k} chunks retrieved{why}"
    undefined = (
        {index: problem for index, problem in enumerate(problems) if problem is not None} if any(problems) else {}
    )
    for index in undefined:
        values[index] = np.nan
        notes.pop(index, None)
    return BatchOutcomes(values, undefined, notes)


def _single(
    batch: Callable[[Sequence[Record], list[ItemContext], RunContext], BatchOutcomes],
) -> Callable[[Record, ItemContext, RunContext], Outcome]:
    def compute(record: Record, item: ItemContext, run: RunContext) -> Outcome:
        with run.batch_scope():
            return batch([record], [item], run).outcome(0)

    return compute


def _label_metric(
    base: str,
    description: str,
    label: str,
    kernel: Callable[[np.ndarray, int], np.ndarray],
    *,
    higher_is_better: bool,
    aggregation: Aggregation = Aggregation.MEAN,
    divides_by_k: bool = True,
) -> None:
    @cache
    def build(k: int) -> Metric:
        def compute_batch(records: Sequence[Record], items: list[ItemContext], run: RunContext) -> BatchOutcomes:
            labels = _batch_labels(records, run, k)
            values = kernel(labels.values[label], k)
            return _outcomes(
                values, labels.problems[label], labels.lengths, k, short="denominator" if divides_by_k else None
            )

        return Metric(
            name=f"{base}@{k}",
            family="retrieval",
            description=description.replace("K", str(k)),
            needs=("chunk_labels",),
            aggregation=aggregation,
            value_range=(0.0, 1.0),
            higher_is_better=higher_is_better,
            compute=_single(compute_batch),
            compute_batch=compute_batch,
        )

    register_cutoff(base, "retrieval", build)


def _first_hit_reciprocal(t: np.ndarray, k: int) -> np.ndarray:
    first = t.argmax(axis=1)
    return np.where(t.any(axis=1), 1.0 / (first + 1), 0.0)


_label_metric(
    "topical_precision",
    "Share of the top K chunks labelled topically_relevant (÷K).",
    "topically_relevant",
    lambda t, k: t.sum(axis=1) / k,
    higher_is_better=True,
)
_label_metric(
    "sufficiency_hit",
    "Some top-K chunk is labelled evidence_sufficient; a rate.",
    "evidence_sufficient",
    lambda s, k: s.any(axis=1).astype(float),
    higher_is_better=True,
    aggregation=Aggregation.RATE,
    divides_by_k=False,
)
_label_metric(
    "sufficiency_rate",
    "Share of the top K chunks labelled evidence_sufficient (÷K).",
    "evidence_sufficient",
    lambda s, k: s.sum(axis=1) / k,
    higher_is_better=True,
)
_label_metric(
    "misleading_context_rate",
    "Share of the top K chunks labelled misleading (÷K); lower is better.",
    "misleading",
    lambda m, k: m.sum(axis=1) / k,
    higher_is_better=False,
)
_label_metric(
    "mrr",
    "Reciprocal rank of the first topically_relevant chunk in the top K (0 if none).",
    "topically_relevant",
    _first_hit_reciprocal,
    higher_is_better=True,
    divides_by_k=False,
)


@cache
def _ndcg_metric(k: int) -> Metric:
    def compute_batch(records: Sequence[Record], items: list[ItemContext], run: RunContext) -> BatchOutcomes:
        settings = run.settings
        labels = _batch_labels(records, run, k)
        pool = settings.ndcg_ideal == "pool"
        grades, ideal, problems = graded(records, labels, pool=pool)
        exponential = _gain_is_exponential(settings.ndcg_gain)
        ideal_dcg = dcg_rows(-np.sort(-grades, axis=1) if ideal is None else ideal, exponential=exponential)
        zero_ideal = ideal_dcg == 0
        values = dcg_rows(grades, exponential=exponential) / np.where(zero_ideal, 1.0, ideal_dcg)
        return _outcomes(values, problems, labels.lengths, k, short="plain", zero_ideal=zero_ideal, pool=pool)

    return Metric(
        name=f"ndcg@{k}",
        family="retrieval",
        description=(
            f"DCG@{k} of grades w (2 sufficient, 1 topical, 0) over the ideal DCG@{k}; 0, noted, where nothing is "
            "relevant to rank (as trec_eval)."
        ),
        needs=("chunk_labels",),
        aggregation=Aggregation.MEAN,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        compute=_single(compute_batch),
        compute_batch=compute_batch,
        signature=_ndcg_settings,
    )


def _ndcg_settings(run: RunContext) -> Mapping[str, Any]:
    return {"ideal": run.settings.ndcg_ideal, "gain": run.settings.ndcg_gain}


register_cutoff("ndcg", "retrieval", _ndcg_metric)


_NO_QRELS = "recall needs the record's qrels (its judged pool); it has none"
_NONE_RELEVANT = "the qrels judge no document relevant (grade ≥ 1)"


@cache
def _recall_metric(k: int) -> Metric:
    def compute_batch(records: Sequence[Record], items: list[ItemContext], run: RunContext) -> BatchOutcomes:
        values = np.full(len(records), np.nan)
        undefined: dict[int, str] = {}
        notes: dict[int, str] = {}
        for i, record in enumerate(records):
            if record.qrels is None:
                undefined[i] = _NO_QRELS
                continue
            value = recall([chunk.doc_id for chunk in record.contexts], record.qrels, k)
            if value is None:
                undefined[i] = _NONE_RELEVANT
                continue
            values[i] = value
            if not record.contexts:
                notes[i] = "no chunks retrieved (scored 0)"
        return BatchOutcomes(values, undefined, notes)

    return Metric(
        name=f"recall@{k}",
        family="retrieval",
        description=(
            f"Share of the qrels' relevant documents (grade ≥ 1) in the top {k} chunks; undefined where the qrels "
            "judge none relevant."
        ),
        needs=("qrels",),
        aggregation=Aggregation.MEAN,
        value_range=(0.0, 1.0),
        higher_is_better=True,
        compute=_single(compute_batch),
        compute_batch=compute_batch,
    )


register_cutoff("recall", "retrieval", _recall_metric)
