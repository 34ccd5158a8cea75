"""``ragmeter serve``'s receiver with the real OpenTelemetry SDK's OTLP/HTTP exporter (protobuf) on loopback: what it
stores and scores equals what the file reader makes of the same spans; a backlog answers 503 with Retry-After, an
oversized body 413, and a repeated export stores nothing twice."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from loopback import running
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from ragmeter import read_records
from ragmeter.io.native import record_to_dict
from ragmeter.serve.app import create_app
from ragmeter.serve.scorer import Scorer
from ragmeter.serve.store import SqliteStore

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[str, SqliteStore]]:
    store = SqliteStore(tmp_path / "store.sqlite")
    app = create_app(
        store,
        Scorer(store, metrics=["lexical", "efficiency"], quiet_s=60.0),
        max_backlog=3,
        max_body_bytes=200_000,
        idle_s=0.05,
    )
    with running(app) as url:
        yield url, store
    store.close()


def _ask(tracer, question: str, answer: str) -> None:
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.INPUT_VALUE, question)
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
            prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.0"
            retriever.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_ID}", "lib-hours")
            retriever.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_CONTENT}", "The library opens at nine.")
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)


def _scored(store: SqliteStore, n: int) -> list:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        outcomes = list(store.scored())
        if len(outcomes) >= n:
            return outcomes
        time.sleep(0.05)
    raise AssertionError(f"{len(list(store.scored()))} of {n} traces scored within 60 s")


def test_what_the_sdk_exports_is_stored_and_scored_as_the_file_reader_reads_it(serving, tmp_path: Path) -> None:
    url, store = serving
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    _ask(tracer, "When does the library open?", "At nine.")
    _ask(tracer, "Where is the library?", "On Quay Street.")
    provider.shutdown()
    saved = tmp_path / "traces.jsonl"
    saved.write_text(json.dumps(MessageToDict(encode_spans(memory.get_finished_spans()))) + "\n", "utf-8")
    expected = {r.id: record_to_dict(r) for r in read_records(saved, format="otel")}
    outcomes = _scored(store, 2)
    assert {o.trace_id: o.record for o in outcomes} == expected
    assert all(
        o.scores["token_f1"] is None and o.undefined["token_f1"] == "record has no reference answer" for o in outcomes
    )
    assert all(o.signatures["token_f1"].startswith("token_f1|") for o in outcomes)
    # /metrics: the traces by state, and each metric's figures over each window, from the store
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(reply.read().decode())
            for s in family.samples
        }
    assert samples[("ragmeter_traces", (("state", "scored"),))] == 2
    for window in ("5m", "1h", "1d"):
        labels = (("metric", "latency_ms"), ("model", "unknown"), ("window", window))
        latencies = [o.scores["latency_ms"] for o in outcomes]
        assert samples[("ragmeter_score_mean", labels)] == pytest.approx(sum(latencies) / 2)
        assert samples[("ragmeter_scores_defined", labels)] == 2
        f1 = (("metric", "token_f1"), ("model", "unknown"), ("window", window))
        assert samples[("ragmeter_scores_undefined", f1)] == 2 and ("ragmeter_score_mean", f1) not in samples
        assert samples[("ragmeter_judge_tokens", (("window", window),))] == 0  # no judge here


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(f"{url}/v1/traces", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


def _request(trace: int) -> bytes:
    span = {"traceId": f"{trace:032x}", "spanId": f"{trace:016x}", "name": "rag", "startTimeUnixNano": "1"}
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}).encode()


def test_a_backlog_asks_exporters_to_retry_and_a_repeat_stores_nothing_twice(serving) -> None:
    url, store = serving
    json_headers = {"Content-Type": "application/json"}
    for trace in (1, 2, 3):  # open traces: their roots never end, nothing is due
        assert _post(url, _request(trace), json_headers)[:1] == (200,)
    assert _post(url, _request(3), json_headers)[0] == 503  # 3 waiting: the limit
    status, headers, body = _post(url, _request(4), json_headers)
    assert (status, headers["retry-after"]) == (503, "5") and b"scoring is behind (3 traces waiting)" in body
    assert store.backlog()["open"] == 3 and len(store.spans(f"{1:032x}")) == 1


def test_an_oversized_or_foreign_body_is_refused(serving) -> None:
    url, _ = serving
    assert _post(url, b" " * 200_001, {"Content-Type": "application/json"})[0] == 413
    status, _, body = _post(url, b"hello", {"Content-Type": "text/plain"})
    assert status == 415 and b"is not an OTLP export" in body
    status, _, body = _post(
        url,
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "x"}]}]}]}).encode(),
        {"Content-Type": "application/json"},
    )
    assert status == 200 and json.loads(body)["partialSuccess"]["rejectedSpans"] == "1"
