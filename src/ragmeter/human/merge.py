"""Several annotators' votes become one label per unit (majority, with a named tie rule), and the
agreement between them is measured per label.

The merged record keeps every vote in ``metadata["annotations"]`` (annotator → ``answer`` labels and
``chunks`` labels by rank), so a merge can be audited or redone with another tie rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragmeter.core.files import Target, atomic_write_text, writing
from ragmeter.core.records import ALL_LABELS, Record
from ragmeter.human.annotation_files import Votes, unit_key
from ragmeter.io.formats.native import record_to_dict
from ragmeter.stats.inter_annotator import LabelAgreement, label_agreement, majority

__all__ = ["agreement_by_label", "agreement_path", "merge_votes", "write_agreement", "write_merged"]


def merge_votes(records: Iterable[Record], votes: Votes, *, ties: str = "undefined") -> Iterator[Record]:
    """Each record with the majority of the votes on it as its labels (``None`` for a tie under
    ``ties="undefined"``); labels without votes are kept as they were."""
    for record in records:
        annotations: dict[str, dict[str, Any]] = {}
        contexts = tuple(
            replace(chunk, labels=_decide(votes.get(unit_key(record, rank), {}), chunk.labels, rank, ties, annotations))
            for rank, chunk in enumerate(record.contexts, start=1)
        )
        labels = _decide(votes.get(unit_key(record), {}), record.labels, 0, ties, annotations)
        if not annotations:
            yield record
            continue
        metadata = {**record.metadata, "annotations": dict(sorted(annotations.items())), "label_ties": ties}
        yield replace(record, contexts=contexts, labels=labels, metadata=metadata)


def _decide(
    unit_votes: dict[str, dict[str, int]], labels: Any, rank: int, ties: str, annotations: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """``labels`` with each voted label set to its majority; each vote copied into ``annotations``."""
    decided = dict(labels)
    for name, by_annotator in unit_votes.items():
        decided[name] = majority(list(by_annotator.values()), ties=ties)
        for annotator, value in by_annotator.items():
            mine = annotations.setdefault(annotator, {"answer": {}, "chunks": {}})
            target = mine["answer"] if rank == 0 else mine["chunks"].setdefault(str(rank), {})
            target[name] = value
    return decided


def agreement_by_label(votes: Votes) -> list[LabelAgreement]:
    """Agreement on each label that has votes, in seed 003's order."""
    by_label: dict[str, list[dict[str, int]]] = {}
    for unit_votes in votes.values():
        for name, by_annotator in unit_votes.items():
            by_label.setdefault(name, []).append(by_annotator)
    return [label_agreement(name, by_label[name]) for name in ALL_LABELS if name in by_label]


def write_merged(records: Iterable[Record], votes: Votes, path: str | Path | Target, *, ties: str = "undefined") -> int:
    """Write the records with their merged labels (:func:`merge_votes`) as native JSONL, atomically;
    returns the number of records written."""
    count = 0
    with writing(path) as temporary, temporary.open("w", encoding="utf-8") as handle:
        for record in merge_votes(records, votes, ties=ties):
            handle.write(json.dumps(record_to_dict(record), ensure_ascii=False) + "\n")
            count += 1
    return count


def agreement_path(output: str | Path) -> Path:
    """Where a merge's agreement report goes: beside its ``output``, ``OUT.agreement.json``."""
    return Path(output).with_name(Path(output).name + ".agreement.json")


def write_agreement(path: str | Path | Target, report: Mapping[str, Any]) -> Path:
    """Write a merge's agreement report to ``path`` (:func:`agreement_path` of the merged file); returns the
    path written."""
    atomic_write_text(path, json.dumps(report, indent=2, ensure_ascii=False))
    return path.path if isinstance(path, Target) else Path(path)
