"""The OTLP reader's rules and its bad traces. Traces are made by the OpenTelemetry SDK's own tracer with
OpenInference attributes (manual instrumentation, as a team without a framework instrumentor writes them) and
exported as OTLP JSON; the faults are made by cutting or editing that real output."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openinference.semconv.trace import (
    DocumentAttributes,
    MessageAttributes,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode
from trace_producers import OtlpJsonLinesExporter, collector_json

import ragmeter
from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import Chunk, Usage
from ragmeter.io.traces.assemble import group_traces
from ragmeter.io.traces.otlp import otlp_spans

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
Span = Any


@pytest.fixture
def traces(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """``write(build, ...)``: a fresh tracer exporting each span as one OTLP JSON line of a new file, ``build(tracer)``
    run with it; returns the file."""
    providers: list[TracerProvider] = []

    def write(build: Callable[[Any], None], name: str = "traces.jsonl", batch: bool = False) -> Path:
        path = tmp_path / name
        provider = TracerProvider()
        exporter = OtlpJsonLinesExporter(path)
        provider.add_span_processor(
            BatchSpanProcessor(exporter, max_export_batch_size=512, max_queue_size=200_000)
            if batch
            else SimpleSpanProcessor(exporter)
        )
        providers.append(provider)
        build(provider.get_tracer("test"))
        provider.shutdown()
        return path

    yield write


def _documents(span: Span, prefix: str, docs: list[tuple[str | None, str]], metadata: list[dict] | None = None) -> None:
    for i, (doc_id, text) in enumerate(docs):
        if doc_id is not None:
            span.set_attribute(f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_ID}", doc_id)
        span.set_attribute(f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
        span.set_attribute(f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_SCORE}", 1.0 - i / 10)
        if metadata is not None:
            span.set_attribute(f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_METADATA}", json.dumps(metadata[i]))


def rag_trace(
    tracer: Any,
    question: str = "Where is the Louvre?",
    answer: str | None = "In Paris [CIT:a].",
    docs: list[tuple[str | None, str]] | None = None,
    *,
    reranked: list[tuple[str, str]] | None = None,
    llm_answer: str | None = "In Paris [CIT:a].",
    tokens: tuple[int, int] = (30, 5),
    session: str = "s",
    root_attributes: dict[str, Any] | None = None,
    child_session: str | None = None,
    error: str | None = None,
) -> None:
    """One RAG request: a root CHAIN span around a RETRIEVER (and a RERANKER) and an LLM span."""
    docs = docs if docs is not None else [("a", "The Louvre is in Paris."), ("b", "The Prado is in Madrid.")]
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.SESSION_ID, session)
        root.set_attribute(SpanAttributes.INPUT_VALUE, question)
        for key, value in (root_attributes or {}).items():
            root.set_attribute(key, value)
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
            if child_session is not None:
                retriever.set_attribute(SpanAttributes.SESSION_ID, child_session)
            _documents(retriever, SpanAttributes.RETRIEVAL_DOCUMENTS, docs)
        if reranked is not None:
            with tracer.start_as_current_span("rerank") as reranker:
                reranker.set_attribute(KIND, OpenInferenceSpanKindValues.RERANKER.value)
                _documents(reranker, RerankerAttributes.RERANKER_INPUT_DOCUMENTS, docs)
                _documents(reranker, RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, reranked)
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
            llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, "model-x")
            llm.set_attribute(f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}", "user")
            llm.set_attribute(f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}", question)
            if llm_answer is not None:
                output = f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0"
                llm.set_attribute(f"{output}.{MessageAttributes.MESSAGE_ROLE}", "assistant")
                llm.set_attribute(f"{output}.{MessageAttributes.MESSAGE_CONTENT}", llm_answer)
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, tokens[0])
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, tokens[1])
        if answer is not None:
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
        if error is not None:
            root.set_status(Status(StatusCode.ERROR, error))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, requests: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    return path


def _spans(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in request["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _errors(path: Path, **options: str) -> list[InputError]:
    return [item for item in ragmeter.iter_records(path, options=options) if isinstance(item, InputError)]


# ---------------------------------------------------------------- the mapping's rules


def test_one_record_per_trace_with_every_field_mapped(traces) -> None:
    path = traces(
        lambda t: rag_trace(
            t,
            root_attributes={
                "app.version": "1.2",
                SpanAttributes.USER_ID: "u7",
                SpanAttributes.METADATA: json.dumps({"team": "search"}),
            },
        )
    )
    [record] = ragmeter.read_records(path)
    assert (record.question, record.answer) == ("Where is the Louvre?", "In Paris [CIT:a].")
    assert record.contexts == (Chunk("a", "The Louvre is in Paris."), Chunk("b", "The Prado is in Madrid."))
    assert record.usage == (Usage(30, 5),)
    assert record.model_id == "model-x" and record.conversation_id == "s"
    assert record.metadata["retrieval_scores"] == [1.0, 0.9]
    assert (record.metadata["app.version"], record.metadata["user_id"], record.metadata["team"]) == (
        "1.2",
        "u7",
        "search",
    )
    assert "trace_notes" not in record.metadata


def test_several_retrieval_stages_follow_the_rule_chosen_and_say_so(traces) -> None:
    path = traces(lambda t: rag_trace(t, reranked=[("b", "The Prado is in Madrid."), ("c", "Madrid is in Spain.")]))
    [last] = ragmeter.read_records(path)
    assert [c.doc_id for c in last.contexts] == ["b", "c"]  # the reranker's order
    assert last.metadata["trace_notes"] == ["2 retrieval stages (RETRIEVER, RERANKER): chunks from the last"]
    [every] = ragmeter.read_records(path, options={"otel-retrieval": "all"})
    assert [c.doc_id for c in every.contexts] == ["a", "b", "c"]
    assert every.metadata["retrieval_scores"] == [1.0, 0.9, 0.9]


def test_the_answer_rule_takes_the_llm_output_when_asked_or_when_the_root_has_none(traces) -> None:
    path = traces(
        lambda t: (
            rag_trace(t, answer="Formatted: In Paris.", llm_answer="In Paris."),
            rag_trace(t, answer=None, llm_answer="Madrid."),
        )
    )
    root, fallback = ragmeter.read_records(path)
    assert root.answer == "Formatted: In Paris." and fallback.answer == "Madrid."
    assert fallback.metadata["trace_notes"][0].startswith("answer from the last output message of LLM span")
    assert [r.answer for r in ragmeter.read_records(path, options={"otel-answer": "llm"})] == ["In Paris.", "Madrid."]


def test_a_document_without_an_id_takes_its_metadata_id_or_its_rank(traces) -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(SpanAttributes.INPUT_VALUE, "q?")
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, "a.")
            with tracer.start_as_current_span("retrieve") as retriever:
                retriever.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                _documents(
                    retriever,
                    SpanAttributes.RETRIEVAL_DOCUMENTS,
                    [(None, "one"), (None, "two")],
                    metadata=[{"doc_id": "kb-7", "title": "Seven"}, {}],
                )

    [record] = ragmeter.read_records(traces(build))
    assert record.contexts == (Chunk("kb-7", "one", title="Seven"), Chunk("2", "two"))
    assert record.usage is None and record.conversation_id is None  # not logged: the metrics say undefined


def test_a_json_root_input_gives_its_question_and_structured_output_falls_back_to_the_llm(traces) -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(SpanAttributes.INPUT_VALUE, json.dumps({"query_bundle": {"query_str": "Why?"}}))
            root.set_attribute(SpanAttributes.INPUT_MIME_TYPE, "application/json")
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, json.dumps({"sources": [1, 2]}))
            root.set_attribute(SpanAttributes.OUTPUT_MIME_TYPE, "application/json")
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
                llm.set_attribute(
                    f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}", "Because."
                )

    [record] = ragmeter.read_records(traces(build))
    assert (record.question, record.answer) == ("Why?", "Because.")


def test_a_server_span_around_the_chain_gives_way_to_the_chain(traces) -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("GET /ask") as server:  # a web framework's span: no OpenInference
            server.set_attribute("http.route", "/ask")
            rag_trace(tracer)

    [record] = ragmeter.read_records(traces(build))
    assert (record.question, record.answer) == ("Where is the Louvre?", "In Paris [CIT:a].")
    assert record.metadata["span_name"] == "rag" and record.conversation_id == "s"
    note = f"read from span {record.metadata['span_id']} ('rag'): the root span 'GET /ask' has no input.value"
    assert record.metadata["trace_notes"] == [note]


def test_embedding_vectors_are_not_decoded(traces) -> None:
    def build(tracer: Any) -> None:
        rag_trace(tracer)
        with tracer.start_as_current_span("embed") as embed:
            embed.set_attribute(KIND, OpenInferenceSpanKindValues.EMBEDDING.value)
            embed.set_attribute(f"{SpanAttributes.EMBEDDING_EMBEDDINGS}.0.embedding.vector", [0.5] * 1536)

    path = traces(build)
    from ragmeter.io.traces.openinference import unused_attribute

    kept = [s.attributes for s in otlp_spans(path, skip=unused_attribute) if s.name == "embed"]
    assert kept == [{KIND: "EMBEDDING"}]
    assert len(list(ragmeter.read_records(path, skip_invalid=True))) == 1


def test_hex_ids_as_a_collector_writes_them_read_as_the_sdks_base64(traces, tmp_path: Path) -> None:
    path = traces(lambda t: [rag_trace(t, session=f"s{i % 2}") for i in range(3)])
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    hexed = tmp_path / "collector.json"
    hexed.write_text(
        "".join(
            collector_json(Parse(line, ExportTraceServiceRequest()).SerializeToString()) + "\n"
            for line in path.read_text().splitlines()
        )
    )
    assert '"kind": 1' in hexed.read_text()  # enums as numbers, as OTLP/JSON writes them
    assert list(ragmeter.read_records(hexed)) == list(ragmeter.read_records(path))


def test_an_otlp_http_body_saved_as_one_indented_document_is_read(traces, tmp_path: Path) -> None:
    path = traces(rag_trace)
    spans = [s for request in _lines(path) for s in _spans(request)]
    body = _lines(path)[0]
    body["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans
    document = tmp_path / "body.json"
    document.write_text(json.dumps(body, indent=2))
    assert [r.question for r in ragmeter.read_records(document)] == ["Where is the Louvre?"]


def test_several_turns_of_a_session_carry_the_earlier_turns_as_history(traces) -> None:
    path = traces(lambda t: [rag_trace(t, question=f"q{i}?", answer=f"a{i}.", session="chat") for i in range(3)])
    records = list(ragmeter.read_records(path))
    assert [len(r.history) for r in records] == [0, 2, 4]
    assert [t.text for t in records[2].history] == ["q0?", "a0.", "q1?", "a1."]


# ---------------------------------------------------------------- bad traces


def test_a_truncated_file_loses_the_cut_line_only_and_says_so(traces, tmp_path: Path) -> None:
    path = traces(lambda t: [rag_trace(t, question=f"q{i}?") for i in range(3)])
    text = path.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1])  # the last root span, half written
    items = list(ragmeter.iter_records(cut))
    assert [r.question for r in items if not isinstance(r, InputError)] == ["q0?", "q1?"]
    errors = [e for e in items if isinstance(e, InputError)]
    assert "cut short" in errors[0].reason and errors[0].line == len(text.splitlines())
    assert "has no root span" in errors[1].reason and "not in the file" in errors[1].reason


def test_a_truncated_single_document_is_one_error(traces, tmp_path: Path) -> None:
    document = tmp_path / "body.json"
    document.write_text(json.dumps(_lines(traces(rag_trace))[0], indent=2)[:-40])
    [error] = _errors(document)
    assert "ends inside the document" in error.reason and error.line == 1


def test_a_cycle_of_parent_ids_and_two_roots_are_errors_of_their_traces(traces, tmp_path: Path) -> None:
    requests = _lines(
        traces(
            lambda t: [
                rag_trace(t, question="cycle?"),
                rag_trace(t, question="two roots?"),
                rag_trace(t, question="fine?"),
            ]
        )
    )
    spans = [s for r in requests for s in _spans(r)]
    first, second = spans[:3], spans[3:6]  # retrieve, llm, rag (children end first)
    first[2]["parentSpanId"] = first[0]["spanId"]  # the root under its own child: rag → retrieve → rag
    del second[0]["parentSpanId"]
    two_roots, cycle = _errors(_write(tmp_path / "bad.jsonl", requests))  # a trace without a root comes out last
    assert "has 2 spans without a parent" in two_roots.reason
    assert (
        "parent ids of its 3 spans form a cycle" in cycle.reason
        and cycle.field == f"trace {base64.b64decode(first[0]['traceId']).hex()}"
    )
    assert [r.question for r in ragmeter.read_records(tmp_path / "bad.jsonl", skip_invalid=True)] == ["fine?"]


def test_a_span_that_cannot_be_decoded_is_an_error_naming_it_and_the_rest_of_its_line_is_read(
    traces, tmp_path: Path
) -> None:
    requests = _lines(traces(rag_trace, batch=True))
    assert len(requests) == 1
    extra = dict(_spans(requests[0])[0], traceId="abc")
    requests[0]["resourceSpans"][0]["scopeSpans"][0]["spans"].append(extra)
    error, record = ragmeter.iter_records(_write(tmp_path / "bad.jsonl", requests))  # errors come as they are met
    assert error.field == "resourceSpans[0].scopeSpans[0].spans[3].traceId" and "16 bytes" in error.reason
    assert record.question == "Where is the Louvre?"


def test_a_trace_without_an_answer_names_the_roots_error_status(traces) -> None:
    path = traces(lambda t: rag_trace(t, answer=None, llm_answer=None, error="model timed out"))
    [error] = _errors(path)
    assert error.reason.startswith("no answer") and "ERROR: 'model timed out'" in error.reason


def test_ten_megabytes_in_one_attribute_stop_its_text_or_stay_out_of_the_metadata(traces) -> None:
    huge = "x" * 10_000_000
    path = traces(lambda t: (rag_trace(t, answer=huge), rag_trace(t, root_attributes={"debug.dump": huge})))
    items = list(ragmeter.iter_records(path))
    assert "holds 10,000,000 characters" in items[0].reason and "output.value" in items[0].field
    assert "debug.dump" not in items[1].metadata
    assert items[1].metadata["trace_notes"] == ["attributes over 10,000 characters not kept: debug.dump"]


def test_spans_of_one_trace_in_two_sessions_keep_the_roots_and_say_so(traces) -> None:
    [record] = ragmeter.read_records(traces(lambda t: rag_trace(t, session="web-1", child_session="web-2")))
    assert record.conversation_id == "web-1"
    assert record.metadata["trace_notes"] == ["spans carry 2 session ids (web-1, web-2): the conversation is web-1"]


def test_a_trace_of_20000_spans_is_one_record(traces) -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute(SpanAttributes.INPUT_VALUE, "Plan a trip?")
            for _ in range(10_000):
                with tracer.start_as_current_span("step") as step:
                    step.set_attribute(KIND, OpenInferenceSpanKindValues.TOOL.value)
            for _ in range(9_999):
                with tracer.start_as_current_span("llm") as llm:
                    llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
                    llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, 2)
                    llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, 1)
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, "Done.")

    path = traces(build, batch=True)
    start = time.perf_counter()
    [record] = ragmeter.read_records(path)
    elapsed = time.perf_counter() - start
    assert len(record.usage) == 9_999 and sum(u.prompt_tokens for u in record.usage) == 19_998
    assert record.metadata["trace_notes"] == ["9999 LLM calls: usage counts them all"]
    print(f"20,000 spans in one trace read in {elapsed:.1f} s")


def test_open_traces_are_bounded_and_a_span_after_its_trace_is_an_error(traces) -> None:
    path = traces(lambda t: [rag_trace(t, question=f"q{i}?") for i in range(4)])
    spans = list(otlp_spans(path))
    rootless = [s for s in spans if s.parent_id is not None]
    late = rootless[0]
    grouped = list(group_traces([*rootless, *[s for s in spans if s.parent_id is None], late], str(path), max_open=2))
    errors = [g for g in grouped if isinstance(g, InputError)]
    # more than 2 traces without a root: the oldest come out early, rootless; their roots then come too late
    assert sum(not g.roots for g in grouped if not isinstance(g, InputError)) == 2
    assert len(errors) == 3 and all("comes after that trace was read" in e.reason for e in errors)


def test_a_span_within_the_settling_window_joins_its_trace_and_one_after_it_is_an_error(traces) -> None:
    path = traces(lambda t: [rag_trace(t, question=f"q{i}?") for i in range(3)])
    spans = list(otlp_spans(path))
    first_trace = [s for s in spans if s.trace_id == spans[0].trace_id]
    others = [s for s in spans if s.trace_id != spans[0].trace_id]
    child = first_trace[0]
    order = [*first_trace[1:], *others, child]  # the child comes 6 spans after its root
    assert [len(g.spans) for g in group_traces(order, "x", settle=10) if not isinstance(g, InputError)] == [3, 3, 3]
    late = [g for g in group_traces(order, "x", settle=2) if isinstance(g, InputError)]
    assert len(late) == 1 and late[0].line == child.line


def test_trace_options_are_refused_for_other_formats_and_other_files_refused_as_traces(tmp_path: Path) -> None:
    native = tmp_path / "run.jsonl"
    native.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    with pytest.raises(ConfigError, match="--otel-retrieval applies to OpenTelemetry traces"):
        list(ragmeter.iter_records(native, options={"otel-retrieval": "all"}))
    with pytest.raises(ConfigError, match="--otel-retrieval takes last, all"):
        list(ragmeter.iter_records(native, format="otel", options={"otel-retrieval": "first"}))
    [error] = list(ragmeter.iter_records(native, format="otel"))
    assert "pass --input-format native" in error.reason


def test_write_back_is_refused_before_any_work_where_it_cannot_land(
    traces, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmeter.cli import main

    path = traces(rag_trace)
    native = tmp_path / "run.jsonl"
    native.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    (tmp_path / "null").symlink_to("/dev/null")
    refusals = {
        (path, "json", tmp_path / "x.json"): "--write-back takes otel FILE",
        (path, "otel", path): "is an input of this command",
        (path, "otel", tmp_path / "null"): "is a stream",
        (native, "otel", tmp_path / "x.json"): "is read as ragmeter's JSONL, not as OpenTelemetry traces",
    }
    for (source, kind, target), message in refusals.items():
        before = path.read_bytes()
        code = main(
            [
                "run",
                str(source),
                "--out",
                str(tmp_path / "out"),
                "--metrics",
                "abstained",
                "--write-back",
                kind,
                str(target),
            ]
        )
        assert code == 2 and message in capsys.readouterr().err
        assert path.read_bytes() == before and not (tmp_path / "out").exists() and not (tmp_path / "x.json").exists()
