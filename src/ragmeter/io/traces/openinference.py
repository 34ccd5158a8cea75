"""One trace of OpenInference spans (the attribute conventions of Arize Phoenix, and of the OpenInference
instrumentors of LlamaIndex, LangChain, OpenAI and others) as one ragmeter record.

The mapping, with the attribute names of ``openinference-semantic-conventions``:

- **root**: the trace's span without a parent. A trace without one (every parent id in the trace, as in a
  cycle, or the root never exported) or with two is an error of the trace. A root without ``input.value`` (a web
  framework's server span around the RAG chain) gives way to the first span below it that has one, breadth
  first, with a note: "the root" below is that span.
- **question**: the root's ``input.value``. JSON there (``input.mime_type`` ``application/json``) gives its text
  when it is a string, else the first of :data:`QUESTION_KEYS` holding a string, at the top or one object down
  (LlamaIndex's ``{"query_bundle": {"query_str": …}}``); failing that, the last ``user`` message of the first
  LLM span's ``llm.input_messages`` (with a note). No question at all is an error of the trace.
- **answer** (``answer`` option ``root``, the default): the root's ``output.value``, JSON read as for the
  question with :data:`ANSWER_KEYS`; failing that, the content of the last LLM span's (by end time) last
  ``llm.output_messages`` message (with a note). Option ``llm``: that message first, the root's output failing
  it. No answer at all is an error of the trace, which names the root's status when it is ERROR.
- **chunks**: the documents of the retrieval stages: RETRIEVER spans' ``retrieval.documents.N.document.*`` and
  RERANKER spans' ``reranker.output_documents.N.document.*`` (the order after reranking), stages ordered by start time;
  a retrieval span that lists no document is no stage. Option ``retrieval`` ``last`` (the default): the last stage's
  documents, which are what the answer was written from; ``all``: every stage's, in order, a document repeated (same id
  and content) kept at its first place. A trace with several stages gets a note. A document's id is its ``document.id``,
  else the ``doc_id`` or ``id`` of its ``document.metadata``, else the ``id`` LangChain's retriever span lists for it in
  its ``output.value`` (when the content there matches), else its 1-based rank in its stage. ``document.score`` and
  ``document.metadata`` are kept per chunk in the record's metadata (``retrieval_scores``, ``retrieval_metadata``); a
  ``title`` in the metadata is the chunk's title.
- **usage**: one entry per LLM call, from ``llm.token_count.prompt`` / ``.completion``, in start order. An LLM
  span inside another LLM span that has counts (LlamaIndex's ``predict`` around ``complete``) is the same
  call: only the innermost spans with counts are counted. No counts in the trace: usage not logged.
- **latency_ms**: the root's end time minus its start time. A root that ends before it starts, or lacks either
  time, gives none, and says why (a note, and the record's :data:`WHY_MISSING`, which the run puts in
  ``latency_ms``'s undefined reason for the item).
- **conversation**: ``session.id`` of the root, else of the first span that has one (several ids in one trace:
  the root's, with a note); **history**: the question and answer of the earlier traces of the same session in the
  file (up to :data:`HISTORY_TURNS` turns, of the :data:`HISTORY_SESSIONS` sessions seen last).
- **model**: ``llm.model_name`` of the LLM span that wrote the answer, else of the last LLM span that has one.
- **metadata**: ``trace_id`` and the root's ``span_id`` (which ``--write-back otel`` uses), the root's span name,
  the root's other attributes (``metadata`` JSON merged in; ``user.id``; ``tag.tags``), the resource's attributes
  as ``resource.<key>``, a status of ERROR, and the notes (``trace_notes``). An attribute value longer than
  :data:`MAX_KEPT_CHARS` characters is not kept (a note says which).
"""

from __future__ import annotations

import json
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from types import SimpleNamespace
from typing import Any

from ragmeter.core.errors import InputError, MissingDependencyError
from ragmeter.core.records import WHY_MISSING, Record
from ragmeter.io.formats.native import record_from_dict
from ragmeter.io.traces.assemble import TraceSpans, group_traces
from ragmeter.io.traces.otlp import SpanRow

__all__ = [
    "ANSWER_KEYS",
    "HISTORY_SESSIONS",
    "HISTORY_TURNS",
    "MAX_KEPT_CHARS",
    "QUESTION_KEYS",
    "Sessions",
    "TraceRules",
    "trace_record",
    "trace_records",
    "unused_attribute",
]

QUESTION_KEYS = ("question", "query", "query_str", "input", "user_input", "prompt", "text")
ANSWER_KEYS = ("answer", "output", "response", "result", "text", "content")
HISTORY_TURNS = 20
HISTORY_SESSIONS = 2_000
MAX_KEPT_CHARS = 10_000
_STATUS_ERROR = 2


@dataclass(frozen=True)
class TraceRules:
    """The choices of the ``otel`` format: which retrieval stages give the chunks (``last``, ``all``) and where
    the answer comes from (``root``, ``llm``)."""

    retrieval: str = "last"
    answer: str = "root"


@cache
def _names() -> SimpleNamespace:
    """The OpenInference attribute names, from ``openinference-semantic-conventions``."""
    try:
        from openinference.semconv.trace import (
            DocumentAttributes,
            MessageAttributes,
            OpenInferenceMimeTypeValues,
            OpenInferenceSpanKindValues,
            RerankerAttributes,
            SpanAttributes,
        )
    except ImportError as exc:
        raise MissingDependencyError(
            "openinference-semantic-conventions", "otel", "reading OpenTelemetry traces"
        ) from exc
    return SimpleNamespace(
        kind=SpanAttributes.OPENINFERENCE_SPAN_KIND,
        input=SpanAttributes.INPUT_VALUE,
        input_mime=SpanAttributes.INPUT_MIME_TYPE,
        output=SpanAttributes.OUTPUT_VALUE,
        output_mime=SpanAttributes.OUTPUT_MIME_TYPE,
        json=OpenInferenceMimeTypeValues.JSON.value,
        session=SpanAttributes.SESSION_ID,
        user=SpanAttributes.USER_ID,
        metadata=SpanAttributes.METADATA,
        tags=SpanAttributes.TAG_TAGS,
        model=SpanAttributes.LLM_MODEL_NAME,
        prompt_tokens=SpanAttributes.LLM_TOKEN_COUNT_PROMPT,
        completion_tokens=SpanAttributes.LLM_TOKEN_COUNT_COMPLETION,
        input_messages=SpanAttributes.LLM_INPUT_MESSAGES,
        output_messages=SpanAttributes.LLM_OUTPUT_MESSAGES,
        role=MessageAttributes.MESSAGE_ROLE,
        content=MessageAttributes.MESSAGE_CONTENT,
        documents=SpanAttributes.RETRIEVAL_DOCUMENTS,
        reranked=RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS,
        doc_id=DocumentAttributes.DOCUMENT_ID,
        doc_content=DocumentAttributes.DOCUMENT_CONTENT,
        doc_score=DocumentAttributes.DOCUMENT_SCORE,
        doc_metadata=DocumentAttributes.DOCUMENT_METADATA,
        llm=OpenInferenceSpanKindValues.LLM.value,
        retriever=OpenInferenceSpanKindValues.RETRIEVER.value,
        reranker=OpenInferenceSpanKindValues.RERANKER.value,
        embeddings=SpanAttributes.EMBEDDING_EMBEDDINGS + ".",
    )


def unused_attribute(key: str) -> bool:
    """Whether the mapping never reads attribute ``key``, so a reader need not decode it: the embedding vectors of
    EMBEDDING spans (``embedding.embeddings.N.embedding.vector``: 1,536 numbers each for some models)."""
    return key.startswith(_names().embeddings)


class Sessions:
    """The turns (question, answer) read so far of the :data:`HISTORY_SESSIONS` sessions seen last."""

    def __init__(self) -> None:
        self._turns: OrderedDict[str, list[dict[str, str]]] = OrderedDict()

    def history(self, session: str | None) -> list[dict[str, str]]:
        return list(self._turns.get(session, [])) if session is not None else []

    def add(self, session: str | None, question: str, answer: str) -> None:
        if session is None:
            return
        turns = self._turns.setdefault(session, [])
        self._turns.move_to_end(session)
        turns.extend([{"role": "user", "text": question}, {"role": "assistant", "text": answer}])
        del turns[: -2 * HISTORY_TURNS]
        if len(self._turns) > HISTORY_SESSIONS:
            self._turns.popitem(last=False)


def trace_records(
    spans: Iterable[SpanRow | InputError], path: str, options: Mapping[str, str] | None = None
) -> Iterator[tuple[int, Record | InputError]]:
    """(line of the trace's root span, record or its error) for every trace of ``spans``, and (line, error) for
    every span or line that could not be read; ``options``: the ``retrieval`` and ``answer`` rules."""
    rules = TraceRules(**(options or {}))
    sessions = Sessions()
    for item in group_traces(spans, path):
        if isinstance(item, InputError):
            yield item.line or 0, item
            continue
        record = trace_record(item, rules, sessions, path)
        yield (record.line or 0) if isinstance(record, InputError) else item.roots[0].line, record


def trace_record(trace: TraceSpans, rules: TraceRules, sessions: Sessions, path: str) -> Record | InputError:
    """The record of ``trace`` (see the module docstring), or the error that stops it."""
    n = _names()
    spans = sorted(trace.spans, key=_start)
    where = {"path": path, "field": f"trace {trace.trace_id}"}
    if len(trace.roots) != 1:
        return InputError(_no_root(trace), line=(trace.roots or trace.spans)[0].line, **where)
    where["line"] = trace.roots[0].line  # type: ignore[assignment]
    notes: list[str] = []
    root = _entry(trace.roots[0], spans, notes)
    llm_spans = [s for s in spans if s.attributes.get(n.kind) == n.llm]
    question = _root_text(root, n.input, n.input_mime, QUESTION_KEYS) or _first_user_message(llm_spans, notes)
    if question is None:
        return InputError(
            f"no question: the root span {root.name!r} has no text in {n.input} and no LLM span has a user message",
            **where,
        )
    answer, answer_span = _answer(root, llm_spans, rules.answer, notes)
    if answer is None:
        status = (
            f" (the root span's status is ERROR: {root.status_message!r})" if root.status_code == _STATUS_ERROR else ""
        )
        return InputError(
            f"no answer: the root span {root.name!r} has no text in {n.output}{status}, and no LLM "
            "span has an output message",
            **where,
        )
    session = _session(root, spans, notes)
    obj: dict[str, Any] = {
        "id": trace.trace_id,
        "question": question,
        "answer": answer,
        "history": sessions.history(session),
    }
    contexts, chunk_extras = _contexts(spans, rules.retrieval, notes)
    if contexts:
        obj["contexts"] = contexts
    usage = _usage(llm_spans)
    if usage:
        obj["usage"] = usage
    if len(usage) > 1:
        notes.append(f"{len(usage)} LLM calls: usage counts them all")
    no_latency = _no_latency(trace.trace_id, root)
    if no_latency is None:
        obj["latency_ms"] = (root.end_ns - root.start_ns) / 1e6  # type: ignore[operator]
    else:
        notes.append(no_latency)
    obj["metadata"] = _metadata(trace, root, session, _model(answer_span, llm_spans, notes), chunk_extras, notes)
    if no_latency is not None:
        obj["metadata"][WHY_MISSING] = {"latency_ms": no_latency}
    try:
        record = record_from_dict(
            obj,
            path=path,
            line=root.line,
            names={
                "question": f"{n.input} of trace {trace.trace_id}",
                "answer": f"{n.output} of trace {trace.trace_id}",
                "contexts": f"retrieval documents of trace {trace.trace_id}",
                "usage": f"LLM token counts of trace {trace.trace_id}",
                "latency_ms": f"root span duration of trace {trace.trace_id}",
            },
        )
    except InputError as exc:
        return exc
    sessions.add(session, question, answer)
    return record


def _no_latency(trace_id: str, root: SpanRow) -> str | None:
    """Why ``root`` gives no latency (it lacks a time, or ends before it starts), else ``None``."""
    missing = [name for name, value in (("start", root.start_ns), ("end", root.end_ns)) if value is None]
    if missing:
        return f"the root span {root.span_id} of trace {trace_id} has no {' or '.join(missing)} time"
    if root.end_ns < root.start_ns:  # type: ignore[operator]
        early = f"{(root.start_ns - root.end_ns) / 1e6:,.3f}".rstrip("0").rstrip(".")  # type: ignore[operator]
        return (
            f"the root span's end time precedes its start time in trace {trace_id} (span {root.span_id} ends "
            f"{early} ms before it starts)"
        )
    return None


def _start(span: SpanRow) -> tuple[int, int]:
    return (span.start_ns if span.start_ns is not None else 0, span.line)


def _entry(root: SpanRow, spans: list[SpanRow], notes: list[str]) -> SpanRow:
    """The span a record is read from: ``root`` when it has an ``input.value``, else the first span below it that
    has one, breadth first and in start order (``root`` when none has)."""
    key = _names().input
    if key in root.attributes:
        return root
    children: dict[str | None, list[SpanRow]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    queue, seen = deque([root]), {root.span_id}
    while queue:
        span = queue.popleft()
        if key in span.attributes:
            notes.append(f"read from span {span.span_id} ({span.name!r}): the root span {root.name!r} has no {key}")
            return span
        for child in children.get(span.span_id, []):
            if child.span_id not in seen:
                seen.add(child.span_id)
                queue.append(child)
    return root


def _no_root(trace: TraceSpans) -> str:
    if trace.roots:
        names = ", ".join(f"{s.span_id} ({s.name!r})" for s in trace.roots[:5])
        return f"has {len(trace.roots)} spans without a parent ({names}): a trace has one root"
    by_id = {s.span_id: s for s in trace.spans}
    cycle = _cycle(by_id)
    if cycle:
        return f"has no root span: the parent ids of its {len(trace.spans)} spans form a cycle ({' → '.join(cycle)})"
    missing = sorted({s.parent_id for s in trace.spans if s.parent_id not in by_id})  # type: ignore[misc]
    return (
        f"has no root span: none of its {len(trace.spans)} spans is without a parent, and their parents "
        f"{', '.join(missing[:3])} are not in the file (was the root span exported, or the file cut short?)"
    )


def _cycle(by_id: Mapping[str, SpanRow]) -> list[str]:
    for start in by_id:
        seen: list[str] = []
        node: str | None = start
        while node is not None and node in by_id and node not in seen:
            seen.append(node)
            node = by_id[node].parent_id
        if node is not None and node in seen:
            return [*seen[seen.index(node) :], node]
    return []


def _text_in(value: Any, keys: tuple[str, ...]) -> str | None:
    """``value`` if a string, else the first of ``keys`` holding a string, at the top or one object down."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return None
    for key in keys:
        if isinstance(value.get(key), str):
            return value[key]
    for inner in value.values():
        if isinstance(inner, Mapping):
            found = next((inner[key] for key in keys if isinstance(inner.get(key), str)), None)
            if found is not None:
                return found
    return None


def _root_text(root: SpanRow, value_key: str, mime_key: str, keys: tuple[str, ...]) -> str | None:
    value = root.attributes.get(value_key)
    if not isinstance(value, str):
        return None
    if root.attributes.get(mime_key) == _names().json:
        try:
            value = json.loads(value)
        except ValueError:
            return None
        return _text_in(value, keys)
    return value


def _messages(span: SpanRow, prefix: str) -> list[dict[str, Any]]:
    return [message for _, message in sorted(_indexed(span.attributes, prefix).items())]


def _indexed(attributes: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``{i: {rest: value}}`` of the flattened attributes ``<prefix>.<i>.<rest>``."""
    out: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if key.startswith(start):
            index, _, rest = key[len(start) :].partition(".")
            if index.isdigit() and rest:
                out.setdefault(int(index), {})[rest] = value
    return out


def _first_user_message(llm_spans: list[SpanRow], notes: list[str]) -> str | None:
    n = _names()
    for span in llm_spans:
        users = [m.get(n.content) for m in _messages(span, n.input_messages) if m.get(n.role) == "user"]
        if users and isinstance(users[-1], str):
            notes.append(f"question from the last user message of LLM span {span.span_id}")
            return users[-1]
    return None


def _llm_answer(llm_spans: list[SpanRow]) -> tuple[str | None, SpanRow | None]:
    n = _names()
    for span in sorted(llm_spans, key=lambda s: (s.end_ns or 0, s.line), reverse=True):
        contents = [m.get(n.content) for m in _messages(span, n.output_messages)]
        if contents and isinstance(contents[-1], str):
            return contents[-1], span
    return None, None


def _answer(root: SpanRow, llm_spans: list[SpanRow], rule: str, notes: list[str]) -> tuple[str | None, SpanRow | None]:
    n = _names()
    from_root = _root_text(root, n.output, n.output_mime, ANSWER_KEYS)
    if rule == "root" and from_root is not None:
        return from_root, None
    text, span = _llm_answer(llm_spans)
    if text is not None:
        if rule == "root":
            notes.append(f"answer from the last output message of LLM span {span.span_id}")  # type: ignore[union-attr]
        return text, span
    return from_root, None


def _session(root: SpanRow, spans: list[SpanRow], notes: list[str]) -> str | None:
    key = _names().session
    ids = list(dict.fromkeys(str(s.attributes[key]) for s in spans if s.attributes.get(key) is not None))
    chosen = root.attributes.get(key)
    chosen = str(chosen) if chosen is not None else (ids[0] if ids else None)
    if len(ids) > 1:
        notes.append(f"spans carry {len(ids)} session ids ({', '.join(ids)}): the conversation is {chosen}")
    return chosen


def _documents(span: SpanRow) -> list[dict[str, Any]]:
    n = _names()
    prefix = n.reranked if span.attributes.get(n.kind) == n.reranker else n.documents
    docs = [doc for _, doc in sorted(_indexed(span.attributes, prefix).items())]
    listed = _listed_ids(span)
    out = []
    for rank, doc in enumerate(docs, start=1):
        content = doc.get(n.doc_content)
        metadata = _json_object(doc.get(n.doc_metadata))
        doc_id = doc.get(n.doc_id) or metadata.get("doc_id") or metadata.get("id")
        if doc_id is None and listed is not None and len(listed) == len(docs) and listed[rank - 1][1] == content:
            doc_id = listed[rank - 1][0]
        out.append(
            {
                "doc_id": str(doc_id if doc_id is not None else rank),
                "text": content,
                **({"title": metadata["title"]} if isinstance(metadata.get("title"), str) else {}),
                "score": doc.get(n.doc_score),
                "metadata": metadata,
            }
        )
    return out


def _has_documents(span: SpanRow) -> bool:
    """Whether a retrieval span lists documents (LlamaIndex nests a RETRIEVER span without any in the one that
    has them)."""
    n = _names()
    prefix = (n.reranked if span.attributes.get(n.kind) == n.reranker else n.documents) + "."
    return any(key.startswith(prefix) for key in span.attributes)


def _listed_ids(span: SpanRow) -> list[tuple[Any, Any]] | None:
    """(id, content) of the documents a retriever span lists in its JSON ``output.value`` (LangChain's
    instrumentor writes them there, with ids it does not put in ``document.id``)."""
    n = _names()
    if span.attributes.get(n.output_mime) != n.json:
        return None
    try:
        listed = json.loads(span.attributes.get(n.output) or "")
    except ValueError:
        return None
    documents = listed.get("documents") if isinstance(listed, Mapping) else None
    if not isinstance(documents, list) or not all(isinstance(d, Mapping) for d in documents):
        return None
    return [(d.get("id"), d.get("page_content")) for d in documents]


def _json_object(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}


def _contexts(spans: list[SpanRow], rule: str, notes: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    n = _names()
    stages = [s for s in spans if s.attributes.get(n.kind) in (n.retriever, n.reranker) and _has_documents(s)]
    if not stages:
        return [], {}
    if len(stages) > 1:
        which = "the last" if rule == "last" else "all, in order"
        notes.append(
            f"{len(stages)} retrieval stages ({', '.join(s.attributes[n.kind] for s in stages)}): chunks from {which}"
        )
    docs: list[dict[str, Any]] = []
    seen: set[tuple[str, Any]] = set()
    for stage in stages[-1:] if rule == "last" else stages:
        for doc in _documents(stage):
            if (doc["doc_id"], doc["text"]) not in seen:
                seen.add((doc["doc_id"], doc["text"]))
                docs.append(doc)
    extras: dict[str, Any] = {}
    if any(d["score"] is not None for d in docs):
        extras["retrieval_scores"] = [d["score"] for d in docs]
    if any(d["metadata"] for d in docs):
        extras["retrieval_metadata"] = [d["metadata"] for d in docs]
    chunks = [{k: v for k, v in d.items() if k not in ("score", "metadata")} for d in docs]
    return chunks, extras


def _usage(llm_spans: list[SpanRow]) -> list[dict[str, int]]:
    n = _names()
    counted = [s for s in llm_spans if n.prompt_tokens in s.attributes or n.completion_tokens in s.attributes]
    ids = {s.span_id for s in counted}
    by_id = {s.span_id: s for s in llm_spans}
    outer = {ancestor for s in counted for ancestor in _ancestors(s, by_id) if ancestor in ids}
    return [
        {
            key: s.attributes[attr]
            for key, attr in (("prompt_tokens", n.prompt_tokens), ("completion_tokens", n.completion_tokens))
            if attr in s.attributes
        }
        for s in counted
        if s.span_id not in outer
    ]


def _ancestors(span: SpanRow, by_id: Mapping[str, SpanRow]) -> Iterable[str]:
    seen: set[str] = set()
    parent = span.parent_id
    while parent is not None and parent in by_id and parent not in seen:
        seen.add(parent)
        yield parent
        parent = by_id[parent].parent_id


def _model(answer_span: SpanRow | None, llm_spans: list[SpanRow], notes: list[str]) -> str | None:
    key = _names().model
    models = list(dict.fromkeys(str(s.attributes[key]) for s in llm_spans if s.attributes.get(key)))
    if len(models) > 1:
        notes.append(f"LLM spans name {len(models)} models ({', '.join(models)})")
    if answer_span is not None and answer_span.attributes.get(key):
        return str(answer_span.attributes[key])
    return models[-1] if models else None


_MAPPED_PREFIXES = (
    "input.",
    "output.",
    "llm.",
    "retrieval.",
    "reranker.",
    "openinference.span.kind",
    "session.id",
    "metadata",
    "user.id",
    "tag.tags",
)


def _metadata(
    trace: TraceSpans,
    root: SpanRow,
    session: str | None,
    model: str | None,
    extras: Mapping[str, Any],
    notes: list[str],
) -> dict[str, Any]:
    n = _names()
    meta: dict[str, Any] = {"trace_id": trace.trace_id, "span_id": root.span_id, "span_name": root.name}
    dropped: list[str] = []
    candidates = {
        **{f"resource.{k}": v for k, v in root.resource.items()},
        **{k: v for k, v in root.attributes.items() if not k.startswith(_MAPPED_PREFIXES)},
        **_json_object(root.attributes.get(n.metadata)),
    }
    for key, value in candidates.items():
        if len(value if isinstance(value, str) else json.dumps(value, default=str)) > MAX_KEPT_CHARS:
            dropped.append(key)
        else:
            meta[key] = value
    if dropped:
        notes.append(f"attributes over {MAX_KEPT_CHARS:,} characters not kept: {', '.join(dropped)}")
    if root.attributes.get(n.user) is not None:
        meta["user_id"] = str(root.attributes[n.user])
    if root.attributes.get(n.tags) is not None:
        meta["tags"] = root.attributes[n.tags]
    if session is not None:
        meta["conversation_id"] = session
    if model is not None:
        meta["model_id"] = model
    if root.status_code == _STATUS_ERROR:
        meta["trace_status"] = f"ERROR: {root.status_message}" if root.status_message else "ERROR"
    meta.update(extras)
    if notes:
        meta["trace_notes"] = notes
    return meta
