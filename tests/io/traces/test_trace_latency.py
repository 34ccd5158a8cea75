"""A trace's latency is its root span's duration; a root that ends before it starts, or lacks a time, gives none,
and the item's undefined reason says why, naming the trace. The traces are made here with the OpenTelemetry SDK's
own tracer, each span's times set by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from trace_producers import OtlpJsonLinesExporter

import ragmeter
from ragmeter.cli import main

SECOND = 1_000_000_000  # ns


def _trace(tracer: Any, question: str, start_ns: int, end_ns: int) -> tuple[str, str]:
    """One root CHAIN span from ``start_ns`` to ``end_ns`` holding a question and its answer; its trace and span
    ids as hex."""
    root = tracer.start_span("rag", start_time=start_ns)
    root.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, OpenInferenceSpanKindValues.CHAIN.value)
    root.set_attribute(SpanAttributes.INPUT_VALUE, question)
    root.set_attribute(SpanAttributes.OUTPUT_VALUE, "In Paris.")
    root.end(end_time=end_ns)
    context = root.get_span_context()
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


@pytest.fixture
def write_traces(tmp_path: Path) -> Callable[[list[tuple[str, int, int]]], tuple[Path, list[tuple[str, str]]]]:
    """``write([(question, start_ns, end_ns), ...])``: one trace each, exported as OTLP JSON lines; the file and
    each trace's (trace id, root span id)."""

    def write(spans: list[tuple[str, int, int]]) -> tuple[Path, list[tuple[str, str]]]:
        path = tmp_path / "traces.jsonl"
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesExporter(path)))
        ids = [_trace(provider.get_tracer("test"), *span) for span in spans]
        provider.shutdown()
        return path, ids

    return write


def test_a_root_that_ends_before_it_starts_gives_no_latency_and_the_item_says_why(write_traces) -> None:
    # the first root lasts 250 ms; the second ends at 3.5 s, 1.5 s before its start at 5 s
    path, [(_, _), (trace_id, span_id)] = write_traces(
        [
            ("Where is the Louvre?", SECOND, SECOND + SECOND // 4),
            ("Where is the Prado?", 5 * SECOND, 3 * SECOND + SECOND // 2),
        ]
    )
    healthy, backwards = ragmeter.read_records(path)
    assert healthy.latency_ms == 250.0
    assert backwards.latency_ms is None
    why = (
        f"the root span's end time precedes its start time in trace {trace_id} (span {span_id} ends 1,500 ms "
        "before it starts)"
    )
    assert backwards.metadata["trace_notes"] == [why]
    assert "trace_notes" not in healthy.metadata

    result = ragmeter.evaluate([healthy, backwards], metrics=["latency_ms"])
    assert result.undefined["latency_ms"] == {1: f"record has no latency_ms: {why}"}
    assert result.summary("latency_ms", "p50").n_undefined == 1


def test_the_run_report_gives_the_reason_with_the_trace_id(
    write_traces, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, [(trace_id, span_id)] = write_traces([("Where is the Louvre?", 2 * SECOND, SECOND)])
    assert main(["run", str(path), "--metrics", "latency_ms", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert (
        f"latency_ms: 1 × record has no latency_ms: the root span's end time precedes its start time in trace "
        f"{trace_id} (span {span_id} ends 1,000 ms before it starts)"
    ) in out
    [row] = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert trace_id in row["undefined"]["latency_ms"]


def test_a_root_without_an_end_time_says_so(write_traces, tmp_path: Path) -> None:
    path, [(trace_id, span_id)] = write_traces([("Where is the Louvre?", SECOND, 2 * SECOND)])
    request = json.loads(path.read_text(encoding="utf-8"))
    del request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["endTimeUnixNano"]
    cut = tmp_path / "no-end.jsonl"
    cut.write_text(json.dumps(request) + "\n", encoding="utf-8")
    [record] = ragmeter.read_records(cut)
    result = ragmeter.evaluate([record], metrics=["latency_ms"])
    assert result.undefined["latency_ms"] == {
        0: f"record has no latency_ms: the root span {span_id} of trace {trace_id} has no end time"
    }


def test_a_reason_that_is_not_text_leaves_the_plain_reason() -> None:
    record = {"id": "a", "question": "q", "answer": "a", "metadata": {"why_missing": {"latency_ms": 7}}}
    result = ragmeter.evaluate([record], metrics=["latency_ms"])
    assert result.undefined["latency_ms"] == {0: "record has no latency_ms"}
