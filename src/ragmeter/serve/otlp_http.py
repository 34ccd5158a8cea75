"""The body of an OTLP/HTTP trace export (``POST /v1/traces``), decoded to the JSON mapping the file reader reads.

OTLP/HTTP sends an ``ExportTraceServiceRequest`` as binary protobuf (``application/x-protobuf``, what the
OpenTelemetry SDKs' exporters send) or as JSON (``application/json``), either optionally gzip-compressed
(``Content-Encoding: gzip``). Protobuf is decoded with the OTLP definitions of ``opentelemetry-proto`` and turned
into protobuf's JSON mapping (ids in base64, 64-bit integers as strings), which the file reader takes as it takes a
collector's file export. A body larger than ``max_bytes``, before or after decompression, is refused before it is
read whole, so a flood or a compressed bomb cannot take the process's memory.

The reply is what the specification asks for: an ``ExportTraceServiceResponse`` in the request's encoding, with
``partial_success`` (the spans rejected and why) when some spans could not be read.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_BODY_BYTES", "BadExport", "decode_export", "export_response"]

#: The largest body accepted, compressed or not: the OTel Collector's default batch stays far below it.
MAX_BODY_BYTES = 16 * 1024 * 1024
PROTOBUF, JSON = "application/x-protobuf", "application/json"


class BadExport(Exception):
    """An export that is refused, with the HTTP status to answer and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def _gunzip(body: bytes, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise BadExport(400, f"the body is not valid gzip: {exc}") from exc
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise BadExport(413, f"the body inflates to more than {max_bytes} bytes")
    if not inflater.eof:
        raise BadExport(400, "the gzip body is cut short")
    return out


def decode_export(
    body: bytes, content_type: str | None, content_encoding: str | None = None, *, max_bytes: int = MAX_BODY_BYTES
) -> Mapping[str, Any]:
    """The export request in ``body`` as OTLP JSON (``{"resourceSpans": [...]}``); :class:`BadExport` with 415
    (not protobuf or JSON), 413 (too large), or 400 (not what it says it is)."""
    if len(body) > max_bytes:
        raise BadExport(413, f"the body is larger than {max_bytes} bytes")
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "gzip":
        body = _gunzip(body, max_bytes)
    elif encoding != "identity":
        raise BadExport(415, f"Content-Encoding {content_encoding!r} is not supported: send gzip or none")
    media = _media_type(content_type)
    if media == PROTOBUF:
        return _from_protobuf(body)
    if media == JSON:
        try:
            request = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadExport(400, f"the JSON body cannot be read: {exc}") from exc
        if not isinstance(request, dict):
            raise BadExport(400, 'expected an OTLP export request, a JSON object {"resourceSpans": [...]}')
        return request
    raise BadExport(415, f"Content-Type {content_type!r} is not an OTLP export: send {PROTOBUF} or {JSON}")


def _from_protobuf(body: bytes) -> Mapping[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise BadExport(400, f"the protobuf body is not an ExportTraceServiceRequest: {exc}") from exc
    return MessageToDict(request)


def export_response(content_type: str | None, rejected: int = 0, message: str = "") -> tuple[bytes, str]:
    """The reply body and its content type: an ``ExportTraceServiceResponse`` in the request's encoding, with
    ``partial_success`` when ``rejected`` spans could not be read."""
    if _media_type(content_type) == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = message
        return response.SerializeToString(), PROTOBUF
    reply: dict[str, Any] = {}
    if rejected:
        reply["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
    return json.dumps(reply).encode("utf-8"), JSON
