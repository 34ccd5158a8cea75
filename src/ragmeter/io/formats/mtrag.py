"""MT-RAG generation-task records (``input``, ``contexts``, ``targets``, ``predictions``).

The last user turn of ``input`` is the question and earlier turns are the history; ``predictions[0]``
is the answer; every ``targets`` text is a reference, except an empty or whitespace-only one, which is
no reference (SPEC; MT-RAG's released files hold none). ``answerability`` and ``Answerability`` are both
accepted, as a string or a one-element list. Task ids ``conv::1`` and ``conv<::>1`` are kept as given.
An IDK verdict already in the row (``metrics.idk_eval``, from MT-RAG's judge) becomes the label
``idk_eval``. ``context_relevance`` lists the indices of the passages annotators judged relevant (MT-RAG's
released human-evaluation tasks hold ``[0, 1, 2]`` for three passages); each passage gets the chunk label
``topically_relevant`` (1 if listed, else 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ragmeter.core.records import Chunk, Record, Turn
from ragmeter.io.fields import FieldReader
from ragmeter.io.formats.base import InputFormat, jsonl_reader
from ragmeter.io.formats.native import (
    default_answerability,
    parse_answerability,
    read_contexts,
    real_references,
)

__all__ = ["FORMAT", "looks_like_mtrag", "record_from_mtrag"]

_ROLES = {"user": "user", "agent": "assistant", "assistant": "assistant"}
_METADATA = (
    "conversation_id",
    "model_id",
    "turn",
    "collection",
    "Collection",
    "question_type",
    "Question Type",
    "multi_turn",
    "Multi-Turn",
    "split",
)


def record_from_mtrag(obj: Any, *, path: str | None = None, line: int | None = None) -> Record:
    f = FieldReader(obj, path=path, line=line)
    turns = f.items("input")
    if not turns:
        raise f.error("input", "missing: expected the conversation turns [{speaker, text}, …]")
    history = [_turn(f, turn, i) for i, turn in enumerate(turns)]
    if history[-1].role != "user":
        raise f.error(f"input[{len(turns) - 1}].speaker", "the last turn must be the user's question")
    predictions = f.items("predictions")
    if not predictions:
        raise f.error("predictions", 'missing: expected [{"text": answer}] (the answer to evaluate)')
    answer = f.text(
        "",
        value=f.mapping("", value=predictions[0], field="predictions[0]").get("text"),
        field="predictions[0].text",
        required=True,
    )
    references = real_references(
        f.text(
            "",
            value=f.mapping("", value=t, field=f"targets[{i}]").get("text"),
            field=f"targets[{i}].text",
            required=True,
        )
        for i, t in enumerate(f.items("targets"))
    )
    key = "answerability" if f.has("answerability") else "Answerability"
    return Record(
        id=f.identifier("task_id", required=False) or str(line),
        question=history[-1].text,
        answer=answer,  # type: ignore[arg-type]
        contexts=_with_relevance(f, tuple(_chunk(f, c, i) for i, c in enumerate(read_contexts(f, "contexts")))),
        references=references,
        history=tuple(history[:-1]),
        answerability=parse_answerability(f, f.raw(key), key) or default_answerability(references),
        labels=_idk_label(f),
        metadata={k: f.obj[k] for k in _METADATA if k in f.obj},
    )


def _idk_label(f: FieldReader) -> dict[str, float]:
    verdicts = f.items("", value=f.mapping("metrics").get("idk_eval"), field="metrics.idk_eval")
    if not verdicts:
        return {}
    value = f.number("", value=verdicts[0], field="metrics.idk_eval[0]", minimum=0)
    if value not in (0.0, 0.5, 1.0):
        raise f.error("metrics.idk_eval[0]", f"expected 0, 0.5 or 1, found {value!r}")
    return {"idk_eval": value}


def _with_relevance(f: FieldReader, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    if not f.has("context_relevance"):
        return chunks
    relevant = set()
    for i, index in enumerate(f.items("context_relevance")):
        where = f"context_relevance[{i}]"
        value = f.number("", value=index, field=where, minimum=0, integer=True)
        if value is None or value >= len(chunks):
            raise f.error(where, f"expected the index of a passage (0 to {len(chunks) - 1}), found {index!r}")
        relevant.add(int(value))
    return tuple(
        replace(chunk, labels={**chunk.labels, "topically_relevant": int(k in relevant)})
        for k, chunk in enumerate(chunks)
    )


def _turn(f: FieldReader, obj: Any, i: int) -> Turn:
    turn = f.mapping("", value=obj, field=f"input[{i}]")
    speaker = f.text("", value=turn.get("speaker"), field=f"input[{i}].speaker", required=True)
    if speaker not in _ROLES:
        raise f.error(f"input[{i}].speaker", f"expected 'user' or 'agent', found {speaker!r}")
    return Turn(_ROLES[speaker], f.text("", value=turn.get("text"), field=f"input[{i}].text", required=True))  # type: ignore[arg-type]


def _chunk(f: FieldReader, obj: Any, i: int) -> Chunk:
    chunk = f.mapping("", value=obj, field=f"contexts[{i}]")
    return Chunk(
        doc_id=f.identifier("", value=chunk.get("document_id"), field=f"contexts[{i}].document_id"),  # type: ignore[arg-type]
        text=f.text("", value=chunk.get("text"), field=f"contexts[{i}].text", required=True),  # type: ignore[arg-type]
        title=f.text("", value=chunk.get("title"), field=f"contexts[{i}].title"),
    )


def looks_like_mtrag(obj: Mapping[str, Any]) -> bool:
    """Whether a JSON object has MT-RAG's fields (``predictions``, or ``task_id`` with ``input``)."""
    return "predictions" in obj or ("task_id" in obj and "input" in obj)


FORMAT = InputFormat(
    "mtrag",
    "MT-RAG JSONL",
    "MT-RAG generation tasks (input, contexts, targets, predictions)",
    jsonl_reader(record_from_mtrag),
    matches=looks_like_mtrag,
)
