"""OTLP JSON, the way OpenTelemetry writes spans to a file: decoded into :class:`SpanRow` objects, one per span.

Two shapes of file are read:

- **JSON lines**, one ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``) per line: what an OTel
  collector's file exporter writes. Read line by line, so a file of any size streams.
- **One JSON document** (possibly spread over many lines): the body of one OTLP/HTTP export, saved. Read whole.

Within a request, ``resourceSpans[].scopeSpans[].spans[]`` (``instrumentationLibrarySpans``, the name before
OTLP 0.15, too). Ids are hex, as the OTLP/JSON specification writes them, or base64, as protobuf's own JSON
mapping writes them (``google.protobuf.json_format``); 64-bit integers are numbers or strings; an ``AnyValue`` is
decoded to the Python value it holds (``arrayValue`` a list, ``kvlistValue`` a dict, ``bytesValue`` bytes).

A span that cannot be decoded (no trace id, an id of the wrong length) is an :class:`InputError` of its line that
names the span by its place (``resourceSpans[0].scopeSpans[1].spans[3]``); the other spans of the line still come.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.core.errors import InputError
from ragmeter.io.rows import WORDS, text_lines

__all__ = ["SpanRow", "any_value", "otlp_spans", "request_spans", "span_id_hex"]

_HEX = re.compile(r"[0-9a-fA-F]+")
_ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


@dataclass(slots=True)
class SpanRow:
    """One span: ids as lowercase hex (``parent_id`` ``None`` for a root), times in ns since the epoch (``None``
    when absent), its attributes decoded, its resource's attributes (shared by the spans of one resource),
    the status code (0 unset, 1 ok, 2 error) and message, and the line of the file it was read from."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    resource: Mapping[str, Any]
    status_code: int
    status_message: str
    line: int


def span_id_hex(value: Any, size: int) -> str | None:
    """An id of ``size`` bytes as lowercase hex, from hex (``2 * size`` digits) or base64; ``None`` if neither.

    >>> span_id_hex("00f067aa0ba902b7", 8), span_id_hex("APBnqgupArc=", 8), span_id_hex("abc", 8)
    ('00f067aa0ba902b7', '00f067aa0ba902b7', None)
    """
    if not isinstance(value, str):
        return None
    if len(value) == 2 * size and _HEX.fullmatch(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == size else None


def any_value(value: Any) -> Any:
    """The Python value an OTLP ``AnyValue`` holds (``None`` for an empty one)."""
    if not isinstance(value, dict):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])  # protobuf's JSON writes "NaN" and "Infinity" as strings
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return None


def attributes(pairs: Any, skip: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """A list of OTLP ``KeyValue`` objects as a dict (a later repeat of a key wins), but the keys ``skip`` names."""
    if not isinstance(pairs, list):
        return {}
    return {
        pair["key"]: any_value(pair.get("value"))
        for pair in pairs
        if isinstance(pair, dict) and isinstance(pair.get("key"), str) and not (skip and skip(pair["key"]))
    }


def otlp_spans(path: Path, skip: Callable[[str], bool] | None = None) -> Iterator[SpanRow | InputError]:
    """Every span of an OTLP JSON file, in file order, or the :class:`InputError` of what cannot be read; the span
    attributes ``skip`` names are not decoded."""
    for line, request in _requests(path):
        if isinstance(request, InputError):
            yield request
            continue
        yield from request_spans(request, path, line, skip)


def _requests(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, export request or error): JSON lines, or the whole file as one document when its first non-blank
    line is not a JSON value by itself."""
    first = True
    for number, text in text_lines(path):
        if isinstance(text, InputError):
            yield number, text
            continue
        if not text.strip():
            continue
        try:
            request = json.loads(text)
        except ValueError:
            if first:
                yield from _document(path, number)
                return
            yield number, InputError(_broken(text), path=str(path), line=number)
            continue
        first = False
        yield number, request


def _broken(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        cut = " (the line stops inside a JSON value: was the file cut short?)" if _ends_inside(text, exc) else ""
        return WORDS.broken_json(exc) + cut
    except ValueError as exc:
        return f"unreadable JSON: {exc}"
    return "unreadable JSON"


def _ends_inside(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether JSON ``text`` broke because it ended before its value did (a string never closed, or the parser
    reaching the end), as a file cut short does."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip())


def _document(path: Path, first: int) -> Iterator[tuple[int, Any]]:
    """The whole file as one JSON document that starts on line ``first``."""
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    try:
        yield first, json.loads(text)
    except json.JSONDecodeError as exc:
        cut = " (the file ends inside the document: was it cut short?)" if _ends_inside(text, exc) else ""
        yield (
            first,
            InputError(
                f"broken JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{cut}", path=str(path), line=first
            ),
        )
    except ValueError as exc:
        yield first, InputError(f"unreadable JSON: {exc}", path=str(path), line=first)


def request_spans(
    request: Any, path: Path, line: int, skip: Callable[[str], bool] | None = None
) -> Iterator[SpanRow | InputError]:
    """The spans of one decoded export request (``{"resourceSpans": [...]}``), or the :class:`InputError` of each
    that cannot be read, named by ``path``, ``line`` and its place in the request."""
    if not isinstance(request, Mapping) or not isinstance(request.get("resourceSpans"), list):
        yield InputError(
            'expected an OTLP export request, a JSON object {"resourceSpans": [...]}', path=str(path), line=line
        )
        return
    for r, resource_spans in enumerate(request["resourceSpans"]):
        if not isinstance(resource_spans, Mapping):
            yield InputError("expected an object", path=str(path), line=line, field=f"resourceSpans[{r}]")
            continue
        resource = attributes((resource_spans.get("resource") or {}).get("attributes"))
        scopes = resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans")) or []
        for s, scope in enumerate(scopes if isinstance(scopes, list) else []):
            for i, span in enumerate((scope or {}).get("spans") or []):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                yield _span(span, resource, path, line, where, skip)


def _span(
    span: Any, resource: Mapping[str, Any], path: Path, line: int, where: str, skip: Callable[[str], bool] | None
) -> SpanRow | InputError:
    if not isinstance(span, Mapping):
        return InputError("expected a span object", path=str(path), line=line, field=where)
    ids: dict[str, str | None] = {}
    for key, size in _ID_BYTES.items():
        raw = span.get(key)
        if key == "parentSpanId" and raw in (None, ""):
            ids[key] = None
            continue
        ids[key] = span_id_hex(raw, size)
        if ids[key] is None:
            return InputError(
                f"expected {size} bytes as {2 * size} hex digits (or base64), found {raw!r}",
                path=str(path),
                line=line,
                field=f"{where}.{key}",
            )
    status = span.get("status") or {}
    code = status.get("code", 0)
    try:
        start, end = (_nanos(span.get(key)) for key in ("startTimeUnixNano", "endTimeUnixNano"))
    except ValueError as exc:
        return InputError(
            f"expected a time in ns since the epoch: {exc}",
            path=str(path),
            line=line,
            field=f"{where}.startTimeUnixNano",
        )
    return SpanRow(
        trace_id=ids["traceId"],
        span_id=ids["spanId"],
        parent_id=ids["parentSpanId"],  # type: ignore[arg-type]
        name=str(span.get("name", "")),
        start_ns=start,
        end_ns=end,
        attributes=attributes(span.get("attributes"), skip),
        resource=resource,
        status_code=_STATUS_NAMES.get(code, code) if isinstance(code, str) else int(code),
        status_message=str(status.get("message", "")),
        line=line,
    )


def _nanos(value: Any) -> int | None:
    if value in (None, "", 0, "0"):
        return None
    return int(value)
