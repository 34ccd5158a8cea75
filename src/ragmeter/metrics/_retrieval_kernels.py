"""Batch kernels behind the retrieval metrics: one pass reads a batch's chunk labels into (n, K) arrays,
then each metric is a few numpy operations. The documented per-query functions in
:mod:`ragmeter.metrics.retrieval` define the values; these compute the same values for many queries
at once (tested against trec_eval, against those functions and against a per-record reading of the
pool rule).

Speed: Python touches each chunk only in C-level passes (``map``, ``bytes``, ``itemgetter``); what
follows is numpy on flat arrays with one entry per chunk (``cells`` places them in the (n, K) tables).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, itemgetter

import numpy as np

from ragmeter.core.records import CHUNK_LABELS, Chunk, Record

__all__ = ["RankedLabels", "dcg_rows", "graded", "ranked_labels"]

_MISSING = object()
#: Codes of ``RankedLabels.unread``: the label was read, is absent, or the annotators tied (``None``).
_READ, _ABSENT, _TIED = 0, 1, 2
_TOPICAL, _SUFFICIENT = "topically_relevant", "evidence_sufficient"
#: What a chunk's qrels lookup gives when its doc_id is unjudged (no qrels grade may take this value).
_UNJUDGED = int(np.iinfo(np.int64).min)
#: Widest range of grades (max − min + 1) whose ideal ranking is counted rather than sorted.
_COUNTED_GRADES = 16
_NO_POOL = "ideal=pool needs the record's qrels (its judged pool); it has none"
_CONTEXTS, _LABELS, _DOC_ID, _QRELS = (attrgetter(name) for name in ("contexts", "labels", "doc_id", "qrels"))


@dataclass(frozen=True)
class RankedLabels:
    """Chunk labels of a batch's top-k chunks.

    ``values[label]`` is an (n, k) 0/1 array (1 where the label equals 1; 0 past the end of a short
    list); ``unread[label]`` has the same shape: 0 where the label was read, 1 where the chunk lacks it,
    2 where the annotators tied (``None``); ``problems[label][i]`` says why record i's label cannot be
    read (at its first unread rank), or is ``None``. ``lengths`` counts each record's chunks (all of
    them); ``chunks`` are the top-k chunks, record after record in rank order, and ``cells[j]`` is the
    place of ``chunks[j]`` in a flattened (n, k) table: row · k + rank − 1.
    """

    k: int
    values: dict[str, np.ndarray]
    unread: dict[str, np.ndarray]
    problems: dict[str, list[str | None]]
    lengths: np.ndarray
    chunks: list[Chunk]
    cells: np.ndarray

    def of_chunks(self, table: np.ndarray) -> np.ndarray:
        """The entries of an (n, k) ``table`` at the chunks' cells, in the order of ``chunks``."""
        flat = table.ravel()
        return flat if len(self.cells) == flat.size else flat[self.cells]


def _problem(name: str, value: object, rank: int) -> str:
    if value is _MISSING:
        return f"chunk at rank {rank} has no {name} label"
    return f"annotators tied on {name} at rank {rank}"


def ranked_labels(records: Sequence[Record], k: int) -> RankedLabels:
    """Read the labels of each record's top ``k`` chunks, once for all the retrieval metrics; a chunk with neither
    ``topically_relevant`` nor ``evidence_sufficient`` takes both from its record's qrels, where it has some
    (:func:`_labels_from_qrels`)."""
    n = len(records)
    lengths = np.fromiter(map(len, map(_CONTEXTS, records)), dtype=np.int64, count=n)
    if n and lengths.max() > k:
        chunks = list(chain.from_iterable([record.contexts[:k] for record in records]))
    else:  # no list is longer than k: its chunks as they are, without a copy of each
        chunks = list(chain.from_iterable(map(_CONTEXTS, records)))
    top_lengths = np.minimum(lengths, k)
    starts = np.cumsum(top_lengths) - top_lengths
    cells = np.repeat(np.arange(n, dtype=np.int64) * k - starts, top_lengths) + np.arange(len(chunks))
    chunk_labels = list(map(_LABELS, chunks))
    if any(map(_QRELS, records)) and not _fully_labelled(chunk_labels):
        chunk_labels = _labels_from_qrels(records, chunks, chunk_labels, top_lengths)
    values: dict[str, np.ndarray] = {}
    unread: dict[str, np.ndarray] = {}
    problems: dict[str, list[str | None]] = {}
    for name in CHUNK_LABELS:
        value, state = _read(chunk_labels, name)
        values[name] = _table(value, cells, n, k)
        if state is None:
            unread[name], problems[name] = np.zeros((n, k), dtype=np.uint8), [None] * n
        else:
            unread[name] = _table(state, cells, n, k)
            problems[name] = _first_problems(unread[name], name)
    return RankedLabels(k, values, unread, problems, lengths, chunks, cells)


def _fully_labelled(chunk_labels: list[Mapping[str, object]]) -> bool:
    """Whether every chunk has both ``topically_relevant`` and ``evidence_sufficient`` as small whole numbers (C-level
    passes, as :func:`_read`'s usual case), so that no label is to be taken from qrels."""
    try:
        for name in (_TOPICAL, _SUFFICIENT):
            bytes(map(itemgetter(name), chunk_labels))
    except (KeyError, TypeError, ValueError):
        return False
    return True


def _labels_from_qrels(
    records: Sequence[Record], chunks: list[Chunk], chunk_labels: list[Mapping[str, object]], top_lengths: np.ndarray
) -> list[Mapping[str, object]]:
    """The chunks' labels, where a chunk has neither ``topically_relevant`` nor ``evidence_sufficient`` and its
    record has qrels, taken from its doc_id's grade w: topical when w ≥ 1, sufficient when w ≥ 2 (seed 003's
    grades), neither when the qrels do not judge it (trec_eval: unjudged is not relevant). A chunk with one of the
    two keeps what it has (the other stays missing)."""
    labelled = list(chunk_labels)
    start = 0
    for record, size in zip(records, top_lengths.tolist(), strict=True):
        pool = record.qrels
        if pool is not None:
            for j in range(start, start + size):
                own = labelled[j]
                if _TOPICAL not in own and _SUFFICIENT not in own:
                    grade = pool.get(chunks[j].doc_id, 0)
                    labelled[j] = {**own, _TOPICAL: int(grade >= 1), _SUFFICIENT: int(grade >= 2)}
        start += size
    return labelled


def _read(chunk_labels: list[Mapping[str, object]], name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """One label of the chunks: 1 where it ``== 1``, else 0; and where it could not be read (1 absent,
    2 ``None``, else 0), or ``None`` when every chunk has it."""
    try:  # the usual case, one C-level pass: every chunk has the label, a whole number in 0…255
        codes = np.frombuffer(bytes(map(itemgetter(name), chunk_labels)), dtype=np.uint8)
        return (codes == 1).astype(np.uint8), None
    except (KeyError, TypeError, ValueError):  # absent, tied (None) or another value: read each
        found = [labels.get(name, _MISSING) for labels in chunk_labels]
        values = np.array([value == 1 for value in found], dtype=np.uint8)
        unread = np.array(
            [_ABSENT if value is _MISSING else _TIED if value is None else _READ for value in found], dtype=np.uint8
        )
        return values, unread


def _table(column: np.ndarray, cells: np.ndarray, n: int, k: int) -> np.ndarray:
    """The chunks' ``column`` as an (n, k) table, 0 past the end of a short list."""
    if len(cells) == n * k:  # no short list: the chunks fill the table in order
        return column.reshape(n, k)
    table = np.zeros(n * k, dtype=column.dtype)
    table[cells] = column
    return table.reshape(n, k)


def _first_problems(unread: np.ndarray, name: str) -> list[str | None]:
    problems: list[str | None] = [None] * len(unread)
    rows = np.flatnonzero(unread.any(axis=1))
    ranks = np.argmax(unread[rows] != _READ, axis=1)
    codes = unread[rows, ranks]
    for row, rank, code in zip(rows.tolist(), ranks.tolist(), codes.tolist(), strict=True):
        problems[row] = _problem(name, _MISSING if code == _ABSENT else None, rank + 1)
    return problems


def graded(
    records: Sequence[Record], labels: RankedLabels, *, pool: bool
) -> tuple[np.ndarray, np.ndarray | None, list[str | None]]:
    """Grades w of the top-k chunks, the ideal grades (pool mode; ``None`` means: the retrieved ones),
    and per record why it cannot be graded (its grades then carry no meaning).

    Pool mode follows trec_eval: a judged doc_id takes its qrels grade once, at its first rank (a
    repeat gains 0); an unjudged chunk takes the grade of its labels, 0 when one is absent, and leaves
    the record ungradable when the annotators tied on one. The ideal is the best k of the qrels grades
    and the unjudged chunks' grades, padded with 0.
    """
    t, s = labels.values[_TOPICAL], labels.values[_SUFFICIENT]
    grades = np.where(s == 1, 2, np.where(t == 1, 1, 0)).astype(np.int64)
    if not pool:
        either = [labels.problems[_TOPICAL][i] or labels.problems[_SUFFICIENT][i] for i in range(len(records))]
        return grades, None, either
    return _pool_graded(records, labels, grades)


def _pool_graded(
    records: Sequence[Record], labels: RankedLabels, label_grades: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    n, k, cells = len(records), labels.k, labels.cells
    pools: list[Mapping[str, int]] = list(map(_QRELS, records))
    no_pool = [row for row, pool in enumerate(pools) if pool is None] if None in pools else []
    for row in no_pool:
        pools[row] = {}
    pool_sizes = np.fromiter(map(len, pools), dtype=np.int64, count=n)
    pool_grades = _pool_grades(records, pools, int(pool_sizes.sum()))
    doc_ids = list(map(_DOC_ID, labels.chunks))
    sizes = np.minimum(labels.lengths, k)
    ends = np.cumsum(sizes).tolist()
    ranked = list(map(doc_ids.__getitem__, map(slice, [0, *ends[:-1]], ends)))  # each record's top-k doc ids
    lookups = map(map, [pool.get for pool in pools], ranked, repeat(repeat(_UNJUDGED)))  # pool.get(doc_id, U)
    found = np.fromiter(chain.from_iterable(lookups), dtype=np.int64, count=len(doc_ids))
    judged = found != _UNJUDGED

    topical, sufficient = labels.of_chunks(labels.unread[_TOPICAL]), labels.of_chunks(labels.unread[_SUFFICIENT])
    own = np.where((topical == _READ) & (sufficient == _READ), labels.of_chunks(label_grades), 0)
    grades = _table(np.where(judged, np.where(_repeats(ranked, sizes), 0, found), own), cells, n, k)
    unjudged = ~judged
    ideal = _best_k(
        np.concatenate([np.repeat(np.arange(n, dtype=np.int64), pool_sizes), cells[unjudged] // k]),
        np.concatenate([pool_grades, own[unjudged]]),
        n,
        k,
    )

    problems: list[str | None] = [None] * n
    tied = unjudged & ((topical == _TIED) | (sufficient == _TIED))
    for j in np.flatnonzero(tied)[::-1].tolist():  # from the last, so that a record keeps its first tie
        row, rank = divmod(int(cells[j]), k)
        problems[row] = _problem(_TOPICAL if topical[j] == _TIED else _SUFFICIENT, None, rank + 1)
    for row in no_pool:
        problems[row] = _NO_POOL
    return grades, ideal, problems


def _pool_grades(records: Sequence[Record], pools: list[Mapping[str, int]], total: int) -> np.ndarray:
    """Every qrels grade of the batch, record after record."""
    grades = np.fromiter(chain.from_iterable([pool.values() for pool in pools]), dtype=np.int64, count=total)
    if np.any(grades == _UNJUDGED):
        row = next(row for row, pool in enumerate(pools) if _UNJUDGED in pool.values())
        raise ValueError(
            f"record {records[row].id!r}: a qrels grade of {_UNJUDGED} is out of range; "
            "grades are small whole numbers (trec_eval's relevance levels)"
        )
    return grades


def _repeats(ranked: list[list[str]], sizes: np.ndarray) -> np.ndarray:
    """Flat mask over the batch's top-k chunks (``ranked``: each record's doc ids in rank order, ``sizes``
    of them): True where the doc_id already appeared at a better rank of the same record. Only the records
    with a repeat are walked."""
    repeats = np.zeros(int(sizes.sum()), dtype=bool)
    distinct = np.fromiter(map(len, map(set, ranked)), dtype=np.int64, count=len(ranked))
    starts = np.cumsum(sizes) - sizes
    for row in np.flatnonzero(distinct < sizes).tolist():
        seen: set[str] = set()
        for offset, doc_id in enumerate(ranked[row]):
            repeats[starts[row] + offset] = doc_id in seen
            seen.add(doc_id)
    return repeats


def _best_k(rows: np.ndarray, grades: np.ndarray, n: int, k: int) -> np.ndarray:
    """(n, k): each row's k best grades (``grades[j]`` belongs to row ``rows[j]``) from best to worst,
    padded with 0 when a row has fewer."""
    if not len(grades):
        return np.zeros((n, k), dtype=np.int64)
    high = int(grades.max())
    width = high - int(grades.min()) + 1
    if width > _COUNTED_GRADES:
        return _best_k_sorted(rows, grades, n, k)
    # few distinct grades (trec's 0/1/2): count each row's entries per grade, best first, and read off
    # which grade each of the k places holds
    counts = np.bincount(rows * width + (high - grades), minlength=n * width).reshape(n, width)
    level = (np.cumsum(counts, axis=1)[:, :, None] <= np.arange(k)).sum(axis=1)
    return np.where(level < width, high - level, 0)


def _best_k_sorted(rows: np.ndarray, grades: np.ndarray, n: int, k: int) -> np.ndarray:
    order = np.lexsort((-grades, rows))
    rows, grades = rows[order], grades[order]
    counts = np.bincount(rows, minlength=n)
    place = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    kept = place < k
    best = np.zeros((n, k), dtype=np.int64)
    best[rows[kept], place[kept]] = grades[kept]
    return best


def dcg_rows(grades: np.ndarray, *, exponential: bool) -> np.ndarray:
    """DCG@k of each row: Σ_r g(w_r) / log2(r + 1) with g(w) = 2^w − 1 or w."""
    gains = np.power(2.0, grades) - 1 if exponential else grades.astype(float)
    discounts = 1.0 / np.log2(np.arange(2, grades.shape[1] + 2))
    return np.asarray(gains @ discounts, dtype=float)
