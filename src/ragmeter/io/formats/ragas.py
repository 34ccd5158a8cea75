"""RAGAS-style rows: ``user_input``, ``retrieved_contexts``, ``response``, ``reference``.

RAGAS contexts are bare strings; their doc_ids come from ``retrieved_context_ids`` when present, else
from their 1-based rank (``"1"``, ``"2"``, …), which is what ``[CIT:…]`` markers must then name. An empty
or whitespace-only ``reference`` is no reference (SPEC).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.core.records import Chunk, Record
from ragmeter.io.fields import FieldReader
from ragmeter.io.formats.base import InputFormat, jsonl_reader
from ragmeter.io.formats.native import default_answerability, read_contexts, real_references

__all__ = ["FORMAT", "RAGAS_FIELDS", "looks_like_ragas", "record_from_ragas"]

RAGAS_FIELDS = ("user_input", "response", "retrieved_contexts", "retrieved_context_ids")


def record_from_ragas(obj: Any, *, path: str | None = None, line: int | None = None) -> Record:
    f = FieldReader(obj, path=path, line=line)
    texts = [
        f.text("", value=t, field=f"retrieved_contexts[{i}]", required=True)
        for i, t in enumerate(read_contexts(f, "retrieved_contexts"))
    ]
    ids = f.items("retrieved_context_ids")
    if ids and len(ids) != len(texts):
        raise f.error("retrieved_context_ids", f"has {len(ids)} ids for {len(texts)} retrieved_contexts")
    doc_ids = [f.identifier("", value=d, field=f"retrieved_context_ids[{i}]") for i, d in enumerate(ids)] or [
        str(rank) for rank in range(1, len(texts) + 1)
    ]
    references = real_references([f.text("reference")])
    return Record(
        id=f.identifier("id", required=False) or str(line),
        question=f.text("user_input", required=True),  # type: ignore[arg-type]
        answer=f.text("response", required=True),  # type: ignore[arg-type]
        contexts=tuple(Chunk(doc_id=d, text=t) for d, t in zip(doc_ids, texts, strict=True)),  # type: ignore[arg-type]
        references=references,
        answerability=default_answerability(references),
        metadata={k: v for k, v in f.obj.items() if k not in ("id", "reference", *RAGAS_FIELDS)},
    )


def looks_like_ragas(obj: Mapping[str, Any]) -> bool:
    """Whether a JSON object or table row has RAGAS's fields (``user_input`` or ``retrieved_contexts``)."""
    return "user_input" in obj or "retrieved_contexts" in obj


FORMAT = InputFormat(
    "ragas",
    "RAGAS JSONL",
    "RAGAS-style rows (user_input, retrieved_contexts, response, reference)",
    jsonl_reader(record_from_ragas),
    matches=looks_like_ragas,
)
