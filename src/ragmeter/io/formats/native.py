"""ragmeter's native record format (one JSON object per JSONL line).

Fields (only ``question`` and ``answer`` are required)::

    id             string or integer; default: the line number (see :func:`record_from_dict` without one)
    question       string
    answer         string (may be empty)
    contexts       list of {doc_id, text, title?, labels?}, in rank order; chunk labels
                   (topically_relevant, evidence_sufficient, misleading) are 0, 1 or null (a tie)
    references     list of strings (or ``reference``: one string; not both); an empty or whitespace-only
                   reference is no reference (SPEC) and is dropped, so ``[""]`` reads as no reference at all
    history        list of {role, text}
    answerability  ANSWERABLE | PARTIAL | UNANSWERABLE | CONVERSATIONAL | UNDERSPECIFIED
    labels         object of answer labels (seed 003's ten are 0, 1 or null) and any others
    qrels          object {doc_id: grade} of the query's judged pool (grades 0/1/2), for ndcg ideal=pool
    nuggets        list of the facts a good answer states, written by people, each {text, importance: vital |
                   okay} or a string (a vital nugget); used as given instead of the judge's nuggets of the
                   reference (TREC's nugget evaluation)
    usage          list of {prompt_tokens, completion_tokens}, one per LLM call (or one object)
    latency_ms     number ≥ 0
    action         string, e.g. "ABSTAIN"
    metadata       object (run_id, conversation_id, model_id, …); unknown top-level keys land here too; a
                   ``language`` there (or at the top level: ``id``, ``en``, ``id-ID``) sets the record's language

Bounds (:mod:`ragmeter.io.fields`): a text holds at most 1,000,000 characters and a record at most 10,000
contexts; a call's token count is at most 1e9 and ``latency_ms`` at most 7 days (604,800,000 ms). A record
past them is an error, not a truncation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ragmeter.core.errors import InputError
from ragmeter.core.records import (
    ANSWER_LABELS,
    CHUNK_LABELS,
    NUGGET_IMPORTANCE,
    Answerability,
    Chunk,
    Nugget,
    Record,
    Turn,
    Usage,
)
from ragmeter.io.fields import MAX_CHUNKS, MAX_LATENCY_MS, MAX_NUGGETS, MAX_TOKENS_PER_CALL, FieldReader
from ragmeter.io.formats.base import InputFormat, jsonl_reader
from ragmeter.text.languages import language_code

__all__ = [
    "FORMAT",
    "KNOWN_FIELDS",
    "content_id",
    "default_answerability",
    "parse_answerability",
    "read_contexts",
    "real_references",
    "record_from_dict",
    "record_to_dict",
]

KNOWN_FIELDS = (
    "id",
    "question",
    "answer",
    "contexts",
    "references",
    "reference",
    "history",
    "answerability",
    "labels",
    "usage",
    "latency_ms",
    "action",
    "qrels",
    "nuggets",
    "metadata",
)
_CHOICES = ", ".join(a.value for a in Answerability)


def record_from_dict(
    obj: Any, *, path: str | None = None, line: int | None = None, names: Mapping[str, str] | None = None
) -> Record:
    """Validate one native record; the first problem raises :class:`~ragmeter.core.errors.InputError`.

    The id is the record's ``id``; without one, the line number ``line``; without both (a record built in
    code), :func:`content_id` of ``obj``, so the same record always gets the same id.
    """
    f = FieldReader(obj, path=path, line=line, names=names)
    if f.has("references") and f.has("reference"):
        raise f.error("reference", "give either 'references' (a list) or 'reference' (one string), not both")
    references = real_references(
        [f.text("reference")]
        if f.has("reference")
        else [f.text("", value=r, field=f"references[{i}]", required=True) for i, r in enumerate(f.items("references"))]
    )
    metadata = {**{k: v for k, v in f.obj.items() if k not in KNOWN_FIELDS}, **f.mapping("metadata")}
    if metadata.get("language") is not None:
        try:
            language_code(metadata["language"])
        except InputError as error:
            raise f.error("language", error.reason) from None
    return Record(
        id=f.identifier("id", required=False) or (str(line) if line is not None else content_id(f.obj)),
        question=f.text("question", required=True),  # type: ignore[arg-type]
        answer=f.text("answer", required=True),  # type: ignore[arg-type]
        contexts=tuple(_chunk(f, c, i) for i, c in enumerate(read_contexts(f, "contexts"))),
        references=references,
        history=tuple(_turn(f, t, i) for i, t in enumerate(f.items("history"))),
        answerability=(
            parse_answerability(f, f.raw("answerability"), "answerability") or default_answerability(references)
        ),
        labels=f.labels("labels", ANSWER_LABELS),
        usage=_usage(f),
        latency_ms=f.number("latency_ms", minimum=0, maximum=MAX_LATENCY_MS, unit="7 days in ms"),
        action=f.text("action"),
        qrels=f.grades("qrels"),
        nuggets=_nuggets(f),
        metadata=metadata,
    )


def record_to_dict(record: Record) -> dict[str, Any]:
    """The native JSON object of ``record`` (fields at their defaults left out); the inverse of
    :func:`record_from_dict`."""
    obj: dict[str, Any] = {"id": record.id, "question": record.question, "answer": record.answer}
    if record.contexts:
        obj["contexts"] = [
            {
                "doc_id": c.doc_id,
                "text": c.text,
                **({"title": c.title} if c.title is not None else {}),
                **({"labels": dict(c.labels)} if c.labels else {}),
            }
            for c in record.contexts
        ]
    optional = {
        "references": list(record.references) or None,
        "history": [{"role": t.role, "text": t.text} for t in record.history] or None,
        "answerability": record.answerability.value if record.answerability else None,
        "labels": dict(record.labels) or None,
        "usage": None
        if record.usage is None
        else [{"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens} for u in record.usage],
        "latency_ms": record.latency_ms,
        "action": record.action,
        "qrels": None if record.qrels is None else dict(record.qrels),
        "nuggets": None
        if record.nuggets is None
        else [{"text": n.text, "importance": "vital" if n.vital else "okay"} for n in record.nuggets],
        "metadata": dict(record.metadata) or None,
    }
    obj.update({key: value for key, value in optional.items() if value is not None})
    return obj


def content_id(obj: Mapping[str, Any]) -> str:
    """``"sha256:"`` and the first 12 hex digits of the SHA-256 of ``obj`` as canonical JSON (keys sorted,
    no spaces, UTF-8): an id that depends on the record's content only.

    >>> content_id({"question": "q", "answer": "a"})
    'sha256:919bf215253f'
    """
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def real_references(texts: Iterable[str | None]) -> tuple[str, ...]:
    """The references that say something: SPEC, an empty or whitespace-only reference is no reference, so
    exact match, F1 and answerability all see the record as having none."""
    return tuple(text for text in texts if text is not None and text.strip())


def read_contexts(f: FieldReader, key: str) -> list[Any]:
    """The raw chunk list under ``key``, refused past :data:`~ragmeter.io.fields.MAX_CHUNKS` chunks."""
    return f.items(key, most=MAX_CHUNKS, what="chunks")


def default_answerability(references: tuple[str, ...]) -> Answerability | None:
    """SPEC §1: ANSWERABLE when a non-empty reference exists, else unknown."""
    return Answerability.ANSWERABLE if any(r.strip() for r in references) else None


def parse_answerability(f: FieldReader, value: Any, field: str) -> Answerability | None:
    if isinstance(value, list) and len(value) == 1:  # MT-RAG writes ["ANSWERABLE"]
        value = value[0]
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value.strip().upper() not in Answerability.__members__:
        raise f.error(field, f"expected one of {_CHOICES}, found {value!r}")
    return Answerability[value.strip().upper()]


def _chunk(f: FieldReader, obj: Any, i: int) -> Chunk:
    where = f"contexts[{i}]"
    if not isinstance(obj, dict):
        raise f.error(where, "expected an object {doc_id, text, title?}")
    chunk = obj
    return Chunk(
        doc_id=f.identifier("", value=chunk.get("doc_id"), field=f"{where}.doc_id"),  # type: ignore[arg-type]
        text=f.text("", value=chunk.get("text"), field=f"{where}.text", required=True),  # type: ignore[arg-type]
        title=f.text("", value=chunk.get("title"), field=f"{where}.title"),
        labels=f.labels("", CHUNK_LABELS, value=chunk.get("labels"), field=f"{where}.labels"),
    )


def _turn(f: FieldReader, obj: Any, i: int) -> Turn:
    where = f"history[{i}]"
    turn = f.mapping("", value=obj, field=where)
    return Turn(
        role=f.text("", value=turn.get("role"), field=f"{where}.role", required=True),  # type: ignore[arg-type]
        text=f.text("", value=turn.get("text"), field=f"{where}.text", required=True),
    )  # type: ignore[arg-type]


def _nuggets(f: FieldReader) -> tuple[Nugget, ...] | None:
    """People's nuggets: each a string (vital) or {text, importance}; ``None`` when the record has none, and an
    empty list is refused (a question with nothing to state has no nugget score: leave the field out)."""
    if not f.has("nuggets"):
        return None
    raw = f.items("nuggets", most=MAX_NUGGETS, what="nuggets")
    if not raw:
        raise f.error("nuggets", "is an empty list: leave the field out, or list the facts a good answer states")
    nuggets = []
    for i, item in enumerate(raw):
        where = f"nuggets[{i}]"
        if isinstance(item, str):
            text, importance = item, "vital"
        else:
            nugget = f.mapping("", value=item, field=where)
            text = nugget.get("text")
            importance = f.text("", value=nugget.get("importance", "vital"), field=f"{where}.importance")
            if importance not in NUGGET_IMPORTANCE:
                raise f.error(f"{where}.importance", f"expected {' or '.join(NUGGET_IMPORTANCE)}, found {importance!r}")
            where = f"{where}.text"
        text = f.text("", value=text, field=where, required=True)
        if not text or not text.strip():  # type: ignore[union-attr]
            raise f.error(where, "is empty: a nugget states a fact")
        nuggets.append(Nugget(text, importance == "vital"))  # type: ignore[arg-type]
    return tuple(nuggets)


def _usage(f: FieldReader) -> tuple[Usage, ...] | None:
    raw = f.raw("usage")
    if raw is None:
        return None
    calls = [raw] if isinstance(raw, dict) else f.items("usage")
    usage = []
    for i, call in enumerate(calls):
        where = f"usage[{i}]" if isinstance(raw, list) else "usage"
        call = f.mapping("", value=call, field=where)
        tokens = [
            f.number(
                "",
                value=call.get(key),
                field=f"{where}.{key}",
                minimum=0,
                integer=True,
                maximum=MAX_TOKENS_PER_CALL,
                unit="tokens per call",
            )
            for key in ("prompt_tokens", "completion_tokens")
        ]
        if tokens[0] is None and tokens[1] is None:
            raise f.error(where, "expected prompt_tokens and/or completion_tokens")
        usage.append(Usage(int(tokens[0] or 0), int(tokens[1] or 0)))
    return tuple(usage)


FORMAT = InputFormat(
    "native",
    "ragmeter's JSONL",
    "ragmeter's JSONL records (the default for a JSONL file)",
    jsonl_reader(record_from_dict),
)
