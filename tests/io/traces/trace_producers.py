"""Real producers of OpenTelemetry traces for the trace tests: a LlamaIndex query engine and a LangChain chain,
instrumented by OpenInference's instrumentors and exported by the OpenTelemetry SDK, to a file of OTLP JSON lines
or over OTLP/HTTP to a loopback receiver that writes what an OTel collector's file exporter writes.

Each producer returns what it fed its pipeline and what the pipeline handed back (questions, the chunks the
retriever gave in order, answers, the token counts its model reported), for the tests to compare ragmeter's records
with, field by field.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict, MessageToJson
from openinference.instrumentation import using_session
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

DOCS = {
    "d-paris": "Paris is the capital of France.",
    "d-berlin": "Berlin is the capital of Germany.",
    "d-rome": "Rome is the capital of Italy.",
}


@dataclass
class Turn:
    """One question put to a pipeline and what came of it."""

    session: str
    question: str
    answer: str = ""
    chunks: list[tuple[str, str]] = field(default_factory=list)  # (id, text) in retrieval order
    usage: list[tuple[int, int]] = field(default_factory=list)  # (prompt, completion) per model call


class OtlpJsonLinesExporter(SpanExporter):
    """Each export as one line of OTLP JSON, as protobuf's JSON mapping writes it (ids in base64)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(MessageToJson(encode_spans(spans), indent=None) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing held open."""


class TeeExporter(SpanExporter):
    """Each export sent to every one of ``exporters`` in turn (the same spans to a backend and to a file)."""

    def __init__(self, *exporters: SpanExporter) -> None:
        self.exporters = exporters

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        results = [exporter.export(spans) for exporter in self.exporters]
        ok = all(result == SpanExportResult.SUCCESS for result in results)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        for exporter in self.exporters:
            exporter.shutdown()


def collector_json(body: bytes) -> str:
    """An OTLP/HTTP protobuf body as the line an OTel collector's file exporter writes: OTLP/JSON, whose one
    difference from protobuf's JSON mapping is that trace and span ids are hex, not base64."""
    request = MessageToDict(ExportTraceServiceRequest.FromString(body), use_integers_for_enums=True)
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(request)


@contextmanager
def otlp_receiver(path: Path) -> Iterator[str]:
    """A loopback OTLP/HTTP receiver (``POST /v1/traces``, protobuf bodies) writing each body to ``path`` as a line
    of OTLP/JSON; yields its traces endpoint."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            assert self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf"
            with path.open("a", encoding="utf-8") as out:
                out.write(collector_json(body) + "\n")
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def instrumented(instrumentor: Any, exporter: SpanExporter) -> Iterator[TracerProvider]:
    """``instrumentor`` sending every span through ``exporter`` as it ends, for the duration of the block."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def naming(question: str) -> list[tuple[str, str]]:
    """The documents that name the question's last word (its city or country), else the first document."""
    last = question.rstrip("?").split()[-1]
    return [(i, text) for i, text in DOCS.items() if last in text] or list(DOCS.items())[:1]


def answer_for(question: str, context: str) -> str:
    """What the test pipelines' model answers: the document in ``context`` that names the question's last word,
    cited by its id, or a refusal."""
    last = question.rstrip("?").split()[-1]
    for doc_id, text in DOCS.items():
        if text in context and last in text:
            return f"{text} [CIT:{doc_id}]"
    return "I don't know."


def run_llama_index(exporter: SpanExporter, turns: list[Turn]) -> list[Turn]:
    """A LlamaIndex query engine over :data:`DOCS` (mock embeddings; a model that answers by :func:`answer_for` and
    reports its token counts), asked each turn's question in its session."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.schema import TextNode
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    reported: list[tuple[int, int]] = []

    class CountingLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="counting-llm")

        @llm_completion_callback()  # as LlamaIndex's own models do: it sends the events the instrumentor reads
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            question = prompt.split("Query: ")[-1].split("\n")[0]
            text = answer_for(question, prompt)
            usage = (len(prompt.split()), len(text.split()))
            reported.append(usage)
            return CompletionResponse(
                text=text,
                raw={"usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}},
            )

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError("the test pipeline does not stream")

    Settings.llm = CountingLLM()
    Settings.embed_model = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex([TextNode(id_=doc_id, text=text) for doc_id, text in DOCS.items()])
    engine = index.as_query_engine(similarity_top_k=2)
    with instrumented(LlamaIndexInstrumentor(), exporter):
        for turn in turns:
            reported.clear()
            with using_session(turn.session):
                response = engine.query(turn.question)
            turn.answer = str(response)
            turn.chunks = [(n.node.node_id, n.node.get_content()) for n in response.source_nodes]
            turn.usage = list(reported)
    return turns


def run_langchain(exporter: SpanExporter, turns: list[Turn]) -> list[Turn]:
    """A LangChain chain (a retriever over :data:`DOCS` that returns the documents naming a word of the question,
    a prompt, a fake chat model that answers by :func:`answer_for` and reports usage, a string parser), asked each
    turn's question in its session."""
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough
    from openinference.instrumentation.langchain import LangChainInstrumentor

    class CityRetriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
            return [Document(id=doc_id, page_content=text) for doc_id, text in naming(query)]

    retriever = CityRetriever()
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context, citing it.\n{context}"), ("human", "{question}")]
    )
    with instrumented(LangChainInstrumentor(), exporter):
        for turn in turns:
            turn.chunks = naming(turn.question)
            context = "\n".join(text for _, text in turn.chunks)
            text = answer_for(turn.question, context)
            usage = (len(prompt.format(context=context, question=turn.question).split()), len(text.split()))
            model = GenericFakeChatModel(
                messages=iter(
                    [
                        AIMessage(
                            content=text,
                            usage_metadata={
                                "input_tokens": usage[0],
                                "output_tokens": usage[1],
                                "total_tokens": sum(usage),
                            },
                        )
                    ]
                )
            )
            chain = (
                {
                    "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
                    "question": RunnablePassthrough(),
                }
                | prompt
                | model
                | StrOutputParser()
            )
            with using_session(turn.session):
                turn.answer = chain.invoke(turn.question)
            turn.usage = [usage]
    return turns


def records_match(path: Path, turns: list[Turn], kind: str) -> list[Any]:
    """The records ragmeter reads from ``path`` (detected as ``kind``), after checking them against ``turns`` field
    by field: question, answer, chunks in order, token counts, session and the history of its earlier turns, the
    trace id as the id, a latency."""
    import ragmeter
    from ragmeter.core.records import Chunk, Usage
    from ragmeter.core.records import Turn as HistoryTurn
    from ragmeter.io.formats import detect_format

    assert detect_format(path) == kind
    records = list(ragmeter.read_records(path))
    assert len(records) == len(turns)
    history: dict[str, list[HistoryTurn]] = {}
    for record, turn in zip(records, turns, strict=True):
        assert record.question == turn.question
        assert record.answer == turn.answer
        assert record.contexts == tuple(Chunk(doc_id, text) for doc_id, text in turn.chunks)
        assert record.usage == tuple(Usage(*counts) for counts in turn.usage)
        assert record.conversation_id == turn.session
        assert record.history == tuple(history.get(turn.session, []))
        history.setdefault(turn.session, []).extend(
            [HistoryTurn("user", turn.question), HistoryTurn("assistant", turn.answer)]
        )
        assert record.id == record.metadata["trace_id"] and len(record.id) == 32
        assert record.latency_ms is not None and record.latency_ms > 0
    return records
