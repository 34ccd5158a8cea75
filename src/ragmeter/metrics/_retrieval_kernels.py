"""Batch kernels behind the retrieval metrics: one pass reads a batch's chunk labels into (n, K) arrays,
then each metric is a few numpy operations. The documented per-query functions in
:mod:`ragmeter.metrics.retrieval` define the values; these compute the same values for many queries
at once (tested against trec_eval and against those functions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ragmeter.records import CHUNK_LABELS, Record

__all__ = ["RankedLabels", "dcg_rows", "graded", "ranked_labels"]

_MISSING = object()


@dataclass(frozen=True)
class RankedLabels:
    """Chunk labels of a batch's top-k chunks: ``values[label]`` is an (n, k) 0/1 array (0 past the end
    of a short list); ``problems[label][i]`` says why record i's label cannot be read, or is ``None``."""

    k: int
    values: dict[str, np.ndarray]
    problems: dict[str, list[str | None]]
    lengths: np.ndarray


def _problem(name: str, value: object, rank: int) -> str:
    if value is _MISSING:
        return f"chunk at rank {rank} has no {name} label"
    return f"annotators tied on {name} at rank {rank}"


def ranked_labels(records: Sequence[Record], k: int) -> RankedLabels:
    n = len(records)
    topical, sufficient, misleading = bytearray(n * k), bytearray(n * k), bytearray(n * k)
    problems: dict[str, list[str | None]] = {name: [None] * n for name in CHUNK_LABELS}
    for i, record in enumerate(records):
        cell = i * k
        for chunk in record.contexts[:k]:
            labels = chunk.labels
            t = labels.get("topically_relevant", _MISSING)
            s = labels.get("evidence_sufficient", _MISSING)
            m = labels.get("misleading", _MISSING)
            if t == 1:
                topical[cell] = 1
            if s == 1:
                sufficient[cell] = 1
            if m == 1:
                misleading[cell] = 1
            if t is _MISSING or t is None or s is _MISSING or s is None or m is _MISSING or m is None:
                for name, value in zip(CHUNK_LABELS, (t, s, m), strict=True):
                    if (value is _MISSING or value is None) and problems[name][i] is None:
                        problems[name][i] = _problem(name, value, cell - i * k + 1)
            cell += 1
    values = {name: np.frombuffer(cells, dtype=np.uint8).reshape(n, k)
              for name, cells in zip(CHUNK_LABELS, (topical, sufficient, misleading), strict=True)}
    lengths = np.fromiter((len(r.contexts) for r in records), dtype=np.int64, count=n)
    return RankedLabels(k, values, problems, lengths)


def graded(records: Sequence[Record], labels: RankedLabels, *, pool: bool
           ) -> tuple[np.ndarray, np.ndarray | None, list[str | None]]:
    """Grades w of the top-k chunks, the ideal grades (pool mode; ``None`` means: the retrieved ones),
    and per record why it cannot be graded. Pool mode follows trec_eval: a judged doc_id takes its
    qrels grade once (at its best rank), an unjudged chunk its own labels or 0 without them."""
    k = labels.k
    t, s = labels.values["topically_relevant"], labels.values["evidence_sufficient"]
    grades = np.where(s == 1, 2, np.where(t == 1, 1, 0)).astype(np.int64)
    if not pool:
        either = [labels.problems["topically_relevant"][i] or labels.problems["evidence_sufficient"][i]
                  for i in range(len(records))]
        return grades, None, either
    rows: list[list[int]] = grades.tolist()
    ideal_rows = []
    problems: list[str | None] = [None] * len(records)
    for i, record in enumerate(records):
        qrels, row = record.qrels, rows[i]
        if qrels is None:
            problems[i] = "ideal=pool needs the record's qrels (its judged pool); it has none"
            ideal_rows.append([0] * k)
            continue
        seen: set[str] = set()
        unjudged = []
        for rank, chunk in enumerate(record.contexts[:k]):
            grade = qrels.get(chunk.doc_id)
            if grade is not None:
                row[rank] = 0 if chunk.doc_id in seen else grade
                seen.add(chunk.doc_id)
                continue
            topical = chunk.labels.get("topically_relevant", _MISSING)
            sufficient = chunk.labels.get("evidence_sufficient", _MISSING)
            if topical is None or sufficient is None:
                problems[i] = _problem("topically_relevant" if topical is None else "evidence_sufficient", None,
                                       rank + 1)
                break
            if topical is _MISSING or sufficient is _MISSING:
                row[rank] = 0  # unjudged and unlabelled: not relevant, as trec_eval
            unjudged.append(row[rank])
        best = sorted([*qrels.values(), *unjudged], reverse=True)[:k]
        ideal_rows.append(best + [0] * (k - len(best)))
    return np.array(rows, dtype=np.int64).reshape(-1, k), np.array(ideal_rows, dtype=np.int64).reshape(-1, k), problems


def dcg_rows(grades: np.ndarray, *, exponential: bool) -> np.ndarray:
    """DCG@k of each row: Σ_r g(w_r) / log2(r + 1) with g(w) = 2^w − 1 or w."""
    gains = np.power(2.0, grades) - 1 if exponential else grades.astype(float)
    discounts = 1.0 / np.log2(np.arange(2, grades.shape[1] + 2))
    return np.asarray(gains @ discounts, dtype=float)
