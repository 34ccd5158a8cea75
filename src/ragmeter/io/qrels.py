"""TREC qrels files: the judged pool of each query, for ``recall@K``, NDCG with ``ideal=pool`` and the labels of
chunks that have none (:mod:`ragmeter.metrics.retrieval`).

One judgment per line, ``query_id iteration doc_id grade`` separated by spaces or tabs (trec_eval's
format; the iteration column is ignored). Grades are whole numbers ≥ 0: seed 003's w (2 sufficient, 1
topical only, 0 neither). The file is UTF-8 text (a byte-order mark at its start is dropped).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from ragmeter.core.errors import InputError
from ragmeter.core.records import Record
from ragmeter.io.rows import text_lines

__all__ = ["attach_qrels", "read_qrels"]


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """query_id → {doc_id: grade}; a malformed line raises :class:`InputError` naming it."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    for line, text in text_lines(path):
        if isinstance(text, InputError):
            raise text
        parts = text.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise InputError(
                f"expected 'query_id iteration doc_id grade', found {len(parts)} columns", path=str(path), line=line
            )
        query_id, _, doc_id, grade = parts
        if not (grade.isascii() and grade.isdigit()):  # "²" is a digit to isdigit, not to int
            raise InputError(
                f"expected a whole-number grade ≥ 0, found {grade!r}", path=str(path), line=line, field="grade"
            )
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    if not qrels:
        raise InputError("no judgment in the qrels file", path=str(path))
    return qrels


def attach_qrels(records: Iterable[Record], qrels: Mapping[str, Mapping[str, int]]) -> Iterator[Record]:
    """The records, each with its query's judgments from ``qrels`` (matched by record id) in place of
    any it carried; a record the file does not judge keeps its own."""
    for record in records:
        judged = qrels.get(record.id)
        yield record if judged is None else replace(record, qrels=dict(judged))
