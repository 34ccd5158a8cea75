"""TREC qrels files: the judged pool of each query, for NDCG with ``ideal=pool``.

One judgment per line, ``query_id iteration doc_id grade`` separated by spaces or tabs (trec_eval's
format; the iteration column is ignored). Grades are whole numbers ≥ 0: seed 003's w (2 sufficient, 1
topical only, 0 neither).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from ragmeter.errors import InputError
from ragmeter.records import Record

__all__ = ["attach_qrels", "read_qrels"]


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """query_id → {doc_id: grade}; a malformed line raises :class:`InputError` naming it."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot open the qrels file: {exc.strerror}", path=str(path)) from exc
    with handle:
        for line, text in enumerate(handle, start=1):
            parts = text.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise InputError(f"expected 'query_id iteration doc_id grade', found {len(parts)} columns",
                                 path=str(path), line=line)
            query_id, _, doc_id, grade = parts
            if not grade.isdigit():
                raise InputError(f"expected a whole-number grade ≥ 0, found {grade!r}", path=str(path), line=line,
                                 field="grade")
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
