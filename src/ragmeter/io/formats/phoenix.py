"""An Arize Phoenix span export: the spans DataFrame of Phoenix's client (``client.spans.get_spans_dataframe``)
saved as Parquet (``df.to_parquet``) or JSON lines (``df.to_json(orient="records", lines=True)``), one row per span,
one record per trace.

Each row becomes the :class:`~ragmeter.io.traces.otlp.SpanRow` the ``otel`` format reads from OTLP JSON, and the
traces are mapped to records by :mod:`ragmeter.io.traces.openinference` with the same two choices
(``--phoenix-retrieval``, ``--phoenix-answer``):

- **ids**: ``context.trace_id``, ``context.span_id`` and ``parent_id`` (empty for a root), hex;
- **times**: ``start_time`` and ``end_time``: timestamps in Parquet; in JSON lines ISO 8601 text, or a number
  since the epoch (``to_json``'s default, milliseconds), whose unit is read from its size (s, ms, µs or ns);
- **status**: ``status_code`` (``UNSET``, ``OK``, ``ERROR``) and ``status_message``;
- **attributes**: the ``attributes.*`` columns, flattened back into OpenInference's dotted keys the way Phoenix
  itself re-exports a span as OTLP: Phoenix nests lists of objects (``attributes.retrieval.documents`` is a list
  of ``{"document.content": …}``) and objects, which become ``retrieval.documents.0.document.content`` and so on,
  except the attributes Phoenix decodes from JSON text (``metadata``, ``document.metadata``,
  ``llm.prompt_template.variables``, ``tool.parameters``), which become JSON text again. A missing value (``null``,
  NaN) is no attribute; a Parquet column of objects holds every key any row has, so keys whose value is ``null``
  are left out of those objects too. A whole number in a column of decimals is an integer (pandas stores an integer
  column with gaps, such as ``llm.token_count.prompt``, as floats). ``openinference.span.kind``, when absent, is
  the ``span_kind`` column's.

An export carries no resource attributes. Phoenix lists the newest spans first, so the spans are put in start-time
order before they are grouped into traces, for a session's earlier turns to come first: the whole file is read
into memory, as the DataFrame was. A row that cannot be read is an :class:`InputError` of its row (Parquet: its
number from 1; JSON lines: its line), naming the column.

A file is recognised by its columns (a Parquet file's schema, the keys of a JSON lines file's first object):
``context.trace_id`` and ``context.span_id``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from ragmeter.core.errors import InputError, MissingDependencyError
from ragmeter.core.records import Record
from ragmeter.io.formats.base import InputFormat, file_head
from ragmeter.io.formats.otel import FORMAT as OTEL
from ragmeter.io.rows import NOT_AN_OBJECT, Span, jsonl_objects, parquet_rows
from ragmeter.io.traces.openinference import trace_records
from ragmeter.io.traces.otlp import SpanRow, span_id_hex

__all__ = ["FORMAT", "ID_COLUMNS", "phoenix_spans", "read_phoenix"]

#: The columns that make a file a Phoenix span export.
ID_COLUMNS = ("context.trace_id", "context.span_id")
_ATTRIBUTES = "attributes."
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO = re.compile(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?")
_PARQUET_MAGIC = b"PAR1"


def read_phoenix(
    path: Path, column_map: Mapping[str, str], span: Span | None = None, options: Mapping[str, str] | None = None
) -> Iterator[tuple[int, Record | InputError]]:
    """(row of the trace's root span, record or its error) for every trace of the export, and (row, error) for
    every row that cannot be read."""
    return trace_records(_in_time_order(phoenix_spans(path)), str(path), options)


def _in_time_order(items: Iterator[SpanRow | InputError]) -> list[SpanRow | InputError]:
    """The errors, then the spans by start time (a span without one first), rows in file order on ties."""
    read = list(items)
    spans = sorted((s for s in read if isinstance(s, SpanRow)), key=lambda s: (s.start_ns or 0, s.line))
    return [*(e for e in read if isinstance(e, InputError)), *spans]


def phoenix_spans(path: Path) -> Iterator[SpanRow | InputError]:
    """Every row of a Phoenix export as a span, in file order, or the :class:`InputError` of a row that cannot be
    read."""
    rows = parquet_rows(path)[1] if (file_head(path) or b"").startswith(_PARQUET_MAGIC) else _json_rows(path)
    for number, row in rows:
        yield row if isinstance(row, InputError) else _span(row, str(path), number)


def _json_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    for number, obj in jsonl_objects(path):
        if isinstance(obj, (InputError, dict)):
            yield number, obj
        else:
            yield number, InputError(NOT_AN_OBJECT, path=str(path), line=number)


def _span(row: Mapping[str, Any], path: str, line: int) -> SpanRow | InputError:
    where = {"path": path, "line": line}
    ids: dict[str, str | None] = {}
    for column, size in (("context.trace_id", 16), ("context.span_id", 8), ("parent_id", 8)):
        raw = row.get(column)
        if column == "parent_id" and (_missing(raw) or raw == ""):
            ids[column] = None
            continue
        ids[column] = span_id_hex(raw, size)
        if ids[column] is None:
            return InputError(f"expected {size} bytes as {2 * size} hex digits, found {raw!r}", field=column, **where)
    times = {}
    for column in ("start_time", "end_time"):
        try:
            times[column] = _nanos(row.get(column))
        except ValueError as exc:
            return InputError(f"expected a time: {exc}", field=column, **where)
    status = row.get("status_code")
    return SpanRow(
        trace_id=ids["context.trace_id"],
        span_id=ids["context.span_id"],  # type: ignore[arg-type]
        parent_id=ids["parent_id"],
        name=str(row.get("name") or ""),
        start_ns=times["start_time"],
        end_ns=times["end_time"],
        attributes=_attributes(row),
        resource={},
        status_code=_STATUS.get(status, 0) if isinstance(status, str) else _whole(status, 0),
        status_message=str(row.get("status_message") or ""),
        line=line,
    )


def _whole(value: Any, default: int) -> int:
    """``value`` as an int when it is a whole number, else ``default``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, float) and value.is_integer() else default


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _nanos(value: Any) -> int | None:
    """A time in ns since the epoch, from a timestamp, ISO 8601 text or a number since the epoch in s, ms, µs or ns
    (told apart by size: a number of seconds below 10¹¹ is a date before the year 5138)."""
    if _missing(value) or value == "":
        return None
    if isinstance(value, datetime):
        return _since_epoch(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        scale = next(
            scale for bound, scale in ((1e11, 10**9), (1e14, 10**6), (1e17, 10**3), (math.inf, 1)) if abs(value) < bound
        )
        return round(value * scale)
    if isinstance(value, str):
        match = _ISO.fullmatch(value.strip())
        if match is None:
            raise ValueError(f"{value!r} is not ISO 8601 (2024-05-01T12:00:00.123Z)")
        base, fraction, offset = match.groups()
        zone = UTC if offset in (None, "Z") else datetime.strptime(offset.replace(":", ""), "%z").tzinfo
        stamp = datetime.fromisoformat(base).replace(tzinfo=zone)
        return _since_epoch(stamp) + int((fraction or "0").ljust(9, "0"))
    raise ValueError(f"found {value!r}")


def _since_epoch(value: datetime) -> int:
    """ns since the epoch (a time without a zone is UTC, as Phoenix's are)."""
    stamp = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    delta = stamp - _EPOCH
    nanosecond = getattr(value, "nanosecond", 0)  # a pandas Timestamp's digits past the microsecond
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1_000 + nanosecond


@cache
def _json_text_keys() -> tuple[str, ...]:
    """The attributes that Phoenix decodes from JSON text, as its OTLP re-export names them."""
    try:
        from openinference.semconv.trace import DocumentAttributes, SpanAttributes
    except ImportError as exc:
        raise MissingDependencyError(
            "openinference-semantic-conventions", "otel", "reading Phoenix span exports"
        ) from exc
    return (
        DocumentAttributes.DOCUMENT_METADATA,
        SpanAttributes.LLM_PROMPT_TEMPLATE_VARIABLES,
        SpanAttributes.METADATA,
        SpanAttributes.TOOL_PARAMETERS,
    )


def _attributes(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column, value in row.items():
        if isinstance(column, str) and column.startswith(_ATTRIBUTES):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            _flatten(column[len(_ATTRIBUTES) :], value, out)
    kind = row.get("span_kind")
    if "openinference.span.kind" not in out and isinstance(kind, str) and kind:
        out["openinference.span.kind"] = kind
    return out


def _flatten(key: str, value: Any, out: dict[str, Any]) -> None:
    """``value`` under ``key`` as OpenInference's dotted keys, into ``out`` (see the module docstring)."""
    if _missing(value):
        return
    if isinstance(value, Mapping):
        if key.endswith(_json_text_keys()):
            out[key] = json.dumps(_without_nulls(value), ensure_ascii=False)
            return
        for inner, item in value.items():
            _flatten(f"{key}.{inner}", item, out)
    elif isinstance(value, list) and any(isinstance(item, Mapping) for item in value):
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                _flatten(f"{key}.{index}", item, out)
    else:
        out[key] = value


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _claims(path: Path) -> str | None:
    """Why the file is a Phoenix export (its columns include :data:`ID_COLUMNS`), or ``None``: only a Parquet
    file's schema, or a JSON lines file's first object, is read."""
    head = file_head(path) or b""
    if head.startswith(_PARQUET_MAGIC):
        try:
            names = parquet_rows(path)[0]
        except (InputError, MissingDependencyError):
            return None
        what = "its columns include"
    elif head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        first = next(iter(jsonl_objects(path)), (0, None))[1]
        names = list(first) if isinstance(first, dict) else []
        what = "its first object has"
    else:
        return None
    if all(column in names for column in ID_COLUMNS):
        return f"{what} {' and '.join(ID_COLUMNS)}, as a Phoenix span export's rows do"
    return None


FORMAT = InputFormat(
    "phoenix",
    "Phoenix span export",
    "an Arize Phoenix span export (its spans DataFrame saved as Parquet or JSON lines) with OpenInference "
    "attributes, one record per trace",
    read_phoenix,
    family="phoenix",
    claims=_claims,
    spans=False,
    options=OTEL.options,
)
