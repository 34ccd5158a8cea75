"""OpenTelemetry traces with OpenInference attributes: OTLP JSON files, one record per trace.

The file is decoded by :mod:`ragmeter.io.traces.otlp`, its spans grouped into traces by
:mod:`ragmeter.io.traces.assemble` and each trace mapped to a record by :mod:`ragmeter.io.traces.openinference`,
whose docstring gives the mapping and the two choices (``--otel-retrieval``, ``--otel-answer``). A file is
recognised by its first bytes (``{"resourceSpans"``), whatever its suffix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ragmeter.core.errors import InputError
from ragmeter.core.records import Record
from ragmeter.io.formats.base import FormatOption, InputFormat, file_head
from ragmeter.io.rows import Span
from ragmeter.io.traces.openinference import trace_records, unused_attribute
from ragmeter.io.traces.otlp import otlp_spans

__all__ = ["FORMAT", "read_otel"]


def read_otel(
    path: Path, column_map: Mapping[str, str], span: Span | None = None, options: Mapping[str, str] | None = None
) -> Iterator[tuple[int, Record | InputError]]:
    """(line of the trace's root span, record or its error) for every trace of the file, and (line, error) for
    every span or line that cannot be read."""
    return trace_records(otlp_spans(path, skip=unused_attribute), str(path), options)


def _claims(path: Path) -> str | None:
    """Why the file is OTLP JSON (its first bytes: an object whose first key is ``resourceSpans``), or ``None``."""
    head = (file_head(path) or b"")[:200]
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and b'"resourceSpans"' in head:
        return 'its first key is "resourceSpans", as in OTLP JSON'
    return None


FORMAT = InputFormat(
    "otel",
    "OpenTelemetry traces (OTLP JSON)",
    "OpenTelemetry traces as OTLP JSON (a collector's file export, or an OTLP/HTTP body) with OpenInference "
    "attributes, one record per trace",
    read_otel,
    family="otel",
    claims=_claims,
    spans=False,
    options=(
        FormatOption(
            "retrieval",
            ("last", "all"),
            "traces with several retrieval stages: the chunks of the last stage (default), or of all",
        ),
        FormatOption(
            "answer",
            ("root", "llm"),
            "the answer: the root span's output (default; the last LLM output when it has none), or "
            "the last LLM call's output message",
        ),
    ),
)
