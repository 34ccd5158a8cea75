"""OTLP/HTTP bodies as the OpenTelemetry SDK's exporter encodes them (protobuf, gzip) and as JSON, decoded to what the
file reader reads; the bodies refused (415, 413, 400) and the replies in the request's encoding."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragmeter.io.traces.otlp import request_spans
from ragmeter.serve.otlp_http import JSON, PROTOBUF, BadExport, decode_export, export_response


def _sdk_spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("query") as root:
        root.set_attribute("input.value", "When does the library open?")
        with tracer.start_as_current_span("retrieve") as child:
            child.set_attribute("retrieval.documents.0.document.id", "lib-hours-1")
            child.set_attribute("llm.token_count.prompt", 12)
    return exporter.get_finished_spans()


def _rows(request) -> list[tuple]:
    return sorted(
        (s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, s.attributes, s.resource["service.name"])
        for s in request_spans(request, Path("POST"), 1)
    )


@pytest.mark.parametrize("compressed", [False, True])
def test_the_sdks_protobuf_export_decodes_to_its_spans(compressed: bool) -> None:
    spans = _sdk_spans()
    body = encode_spans(spans).SerializeToString()
    request = decode_export(
        gzip.compress(body) if compressed else body, f"{PROTOBUF}; charset=binary", "gzip" if compressed else None
    )
    expected = sorted(
        (
            f"{s.context.trace_id:032x}",
            f"{s.context.span_id:016x}",
            f"{s.parent.span_id:016x}" if s.parent else None,
            s.name,
            s.start_time,
            s.end_time,
            dict(s.attributes),
            "rag-app",
        )
        for s in spans
    )
    assert _rows(request) == expected and len(expected) == 2


def test_a_json_export_decodes_as_it_is() -> None:
    request = {
        "resourceSpans": [
            {
                "resource": {},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "query",
                            }
                        ]
                    }
                ],
            }
        ]
    }
    assert decode_export(json.dumps(request).encode(), "application/json") == request


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "status", "says"),
    [
        (b"{}", "text/plain", None, 415, "is not an OTLP export"),
        (b"{}", JSON, "br", 415, "Content-Encoding 'br'"),
        (b"[1, 2]", JSON, None, 400, "expected an OTLP export request"),
        (b"{", JSON, None, 400, "cannot be read"),
        (b"\xff\xfe not protobuf", PROTOBUF, None, 400, "not an ExportTraceServiceRequest"),
        (b"not gzip", JSON, "gzip", 400, "not valid gzip"),
        (gzip.compress(b"{}")[:-6], JSON, "gzip", 400, "cut short"),
        (gzip.compress(b" " * 5_000), JSON, "gzip", 413, "inflates to more than 4096 bytes"),
        (b" " * 5_000, JSON, None, 413, "larger than 4096 bytes"),
    ],
)
def test_a_body_that_is_not_an_export_is_refused_with_its_status(
    body: bytes, content_type: str, encoding: str | None, status: int, says: str
) -> None:
    with pytest.raises(BadExport, match=says) as refused:
        decode_export(body, content_type, encoding, max_bytes=4096)
    assert refused.value.status == status


def test_the_reply_is_in_the_requests_encoding_with_the_rejected_spans() -> None:
    body, media = export_response(PROTOBUF, rejected=2, message="2 spans without a trace id")
    reply = ExportTraceServiceResponse.FromString(body)
    assert media == PROTOBUF and reply.partial_success.rejected_spans == 2
    assert export_response(JSON) == (b"{}", JSON)
    assert json.loads(export_response(JSON, 1, "why")[0]) == {
        "partialSuccess": {"rejectedSpans": "1", "errorMessage": "why"}
    }
