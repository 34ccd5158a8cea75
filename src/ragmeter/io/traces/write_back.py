"""Scores written back onto the traces they came from, as OTLP JSON that an OTel collector or Arize Phoenix ingests.

Each scored trace gets one new span, a child of its root: name ``ragmeter.evaluation``, OpenInference span kind
``EVALUATOR``, and the attributes

- ``ragmeter.<metric>``: the item's value (a double), for each metric it has a value of;
- ``ragmeter.<metric>.undefined``: why it has none, for each metric it has no value of;
- ``ragmeter.signature.<metric>``: the metric's signature (settings, model, prompt hash, version);
- ``ragmeter.item_id`` and ``ragmeter.version``.

Its span id is the first 8 bytes of SHA-256 of the trace id, the root's span id and the signatures, so writing the
same scores back twice gives the same span (a collector keeps one), and other scores a new one. Its start and end
are the time of writing. The file holds one ``ExportTraceServiceRequest`` per line, of up to :data:`SPANS_PER_LINE`
spans (the shape an OTel collector's file exporter writes, and a body ``POST /v1/traces`` takes), built with
``opentelemetry-proto``'s messages and written as OTLP/JSON prescribes: ids in hex, enums as numbers.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

from ragmeter._version import __version__
from ragmeter.core.errors import MissingDependencyError
from ragmeter.core.files import Target, writing

__all__ = ["SPANS_PER_LINE", "TRACE_FORMATS", "evaluation_requests", "write_back_otel"]

SPANS_PER_LINE = 1_000
#: The input formats whose records are traces, with the trace and root span ids scores are written back to.
TRACE_FORMATS = ("otel", "phoenix")
_HEX_IDS = ("traceId", "spanId", "parentSpanId")


def write_back_otel(
    target: Target,
    items: Iterable[Mapping[str, Any]],
    traces: Mapping[str, tuple[str, str]],
    signatures: Mapping[str, str],
) -> int:
    """Write the evaluation span of every item of ``items`` (rows of ``items.jsonl``) whose id ``traces`` maps to
    (trace id, root span id) into ``target``; the number written."""
    written = 0
    with writing(target) as path, path.open("w", encoding="utf-8") as out:
        for request, count in evaluation_requests(items, traces, signatures, time.time_ns()):
            out.write(json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n")
            written += count
    return written


def evaluation_requests(
    items: Iterable[Mapping[str, Any]],
    traces: Mapping[str, tuple[str, str]],
    signatures: Mapping[str, str],
    now_ns: int,
) -> Iterator[tuple[dict[str, Any], int]]:
    """(OTLP/JSON export request, spans in it) for the items ``traces`` knows, :data:`SPANS_PER_LINE` a request."""
    proto = _proto()
    digest = hashlib.sha256(json.dumps(dict(signatures), sort_keys=True).encode("utf-8")).hexdigest()
    batch: list[Any] = []
    for row in items:
        ids = traces.get(str(row["id"]))
        if ids is None:
            continue
        batch.append(_span(proto, row, ids, signatures, digest, now_ns))
        if len(batch) == SPANS_PER_LINE:
            yield _request(proto, batch), len(batch)
            batch = []
    if batch:
        yield _request(proto, batch), len(batch)


def _proto() -> Any:
    try:
        from google.protobuf import json_format
        from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
        from opentelemetry.proto.common.v1 import common_pb2
        from opentelemetry.proto.resource.v1 import resource_pb2
        from opentelemetry.proto.trace.v1 import trace_pb2
    except ImportError as exc:
        raise MissingDependencyError("opentelemetry-proto", "otel", "--write-back otel") from exc
    return SimpleNamespace(
        json_format=json_format,
        service=trace_service_pb2,
        common=common_pb2,
        resource=resource_pb2,
        trace=trace_pb2,
        kind=SpanAttributes.OPENINFERENCE_SPAN_KIND,
        evaluator=OpenInferenceSpanKindValues.EVALUATOR.value,
    )


def _value(proto: Any, value: str | float) -> Any:
    if isinstance(value, str):
        return proto.common.AnyValue(string_value=value)
    return proto.common.AnyValue(double_value=value)


def _span(
    proto: Any, row: Mapping[str, Any], ids: tuple[str, str], signatures: Mapping[str, str], digest: str, now_ns: int
) -> Any:
    trace_id, root_id = ids
    scores, undefined = row.get("scores") or {}, row.get("undefined") or {}
    attributes: list[tuple[str, str | float]] = [
        (proto.kind, proto.evaluator),
        ("ragmeter.item_id", str(row["id"])),
        ("ragmeter.version", __version__),
    ]
    for metric, signature in signatures.items():
        value = scores.get(metric)
        if value is not None:
            attributes.append((f"ragmeter.{metric}", float(value)))
        else:
            attributes.append((f"ragmeter.{metric}.undefined", str(undefined.get(metric, "no value"))))
        attributes.append((f"ragmeter.signature.{metric}", signature))
    span_id = hashlib.sha256(f"{trace_id}/{root_id}/{digest}".encode()).digest()[:8]
    return proto.trace.Span(
        trace_id=bytes.fromhex(trace_id),
        span_id=span_id,
        parent_span_id=bytes.fromhex(root_id),
        name="ragmeter.evaluation",
        kind=proto.trace.Span.SpanKind.SPAN_KIND_INTERNAL,
        start_time_unix_nano=now_ns,
        end_time_unix_nano=now_ns,
        attributes=[proto.common.KeyValue(key=key, value=_value(proto, value)) for key, value in attributes],
    )


def _request(proto: Any, spans: list[Any]) -> dict[str, Any]:
    request = proto.service.ExportTraceServiceRequest(
        resource_spans=[
            proto.trace.ResourceSpans(
                resource=proto.resource.Resource(
                    attributes=[proto.common.KeyValue(key="service.name", value=_value(proto, "ragmeter"))]
                ),
                scope_spans=[
                    proto.trace.ScopeSpans(
                        scope=proto.common.InstrumentationScope(name="ragmeter", version=__version__), spans=spans
                    )
                ],
            )
        ]
    )
    data = proto.json_format.MessageToDict(request, use_integers_for_enums=True)
    for resource_spans in data["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in _HEX_IDS:
                    span[key] = base64.b64decode(span[key]).hex()
    return data
