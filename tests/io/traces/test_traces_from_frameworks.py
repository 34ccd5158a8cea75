"""Traces produced at test time by LlamaIndex and LangChain, instrumented by OpenInference and exported by the
OpenTelemetry SDK (to a file, and over OTLP/HTTP to a loopback receiver), read back as records equal to what the
pipelines were fed and gave; scored by ``ragmeter run`` with no mapping flags; scores written back as OTLP JSON
and read by the OTel protobuf JSON parser onto the right traces."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf.json_format import Parse
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from site_blocks import PagePlan, run_page
from trace_producers import (
    OtlpJsonLinesExporter,
    Turn,
    otlp_receiver,
    records_match,
    run_langchain,
    run_llama_index,
)

import ragmeter
from ragmeter.io.formats import detect_format

QUESTIONS = [
    ("s-1", "What is the capital of France?"),
    ("s-1", "And the capital of Germany?"),
    ("s-2", "What is the capital of Spain?"),
]


def _turns() -> list[Turn]:
    return [Turn(session, question) for session, question in QUESTIONS]


@pytest.fixture(scope="module")
def llama_index_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Turn]]:
    path = tmp_path_factory.mktemp("llama") / "traces.json"
    return path, run_llama_index(OtlpJsonLinesExporter(path), _turns())


@pytest.fixture(scope="module")
def langchain_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Turn]]:
    path = tmp_path_factory.mktemp("langchain") / "traces.jsonl"
    with otlp_receiver(path) as endpoint:
        turns = run_langchain(OTLPSpanExporter(endpoint=endpoint, timeout=10), _turns())
    return path, turns


def test_llama_index_traces_in_a_file_are_the_records_the_pipeline_saw(llama_index_file) -> None:
    path, turns = llama_index_file
    records = records_match(path, turns, "otel")
    assert all(len(turn.usage) == 1 for turn in turns)  # LlamaIndex nests predict around complete: one call
    assert {r.model_id for r in records} == {"counting-llm"}


def test_langchain_traces_sent_over_otlp_http_are_the_records_the_chain_saw(langchain_file) -> None:
    path, turns = langchain_file
    records = records_match(path, turns, "otel")
    assert [r.contexts[0].doc_id for r in records] == ["d-paris", "d-berlin", "d-paris"]  # ids LangChain kept
    assert [r.answer for r in records][-1] == "I don't know."


def test_the_refusal_of_a_traced_answer_counts_as_an_abstention_and_citations_as_citations(langchain_file) -> None:
    path, _ = langchain_file
    result = ragmeter.evaluate(ragmeter.read_records(path), metrics=["abstained", "overlap"])
    assert list(result.scores["abstained"]) == [0.0, 0.0, 1.0]
    assert list(result.scores["overlap"][:2]) == [1.0, 1.0]  # each sentence cites the chunk it repeats


@pytest.mark.parametrize("fixture", ["llama_index_file", "langchain_file"])
def test_ragmeter_run_scores_a_trace_export_with_no_mapping_flag_and_writes_scores_back(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path, turns = request.getfixturevalue(fixture)
    back = tmp_path / "scores.otlp.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter.cli",
            "run",
            str(path),
            "--out",
            str(tmp_path / "run"),
            "--write-back",
            "otel",
            str(back),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "overlap" in done.stdout and "total_tokens" in done.stdout and "latency_ms" in done.stdout
    assert f"Scores of {len(turns)} traces written back" in done.stderr

    items = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    roots = {r.id: r.metadata["span_id"] for r in ragmeter.read_records(path)}
    spans = []
    for line in back.read_text().splitlines():
        # OTLP/JSON writes ids in hex where protobuf's JSON mapping has base64: the one documented difference
        request_json = json.loads(line)
        for resource_spans in request_json["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        message = Parse(json.dumps(request_json), ExportTraceServiceRequest())
        spans.extend(s for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans)
    assert len(spans) == len(items)
    for span, item in zip(spans, items, strict=True):
        assert span.trace_id.hex() == item["id"] and span.parent_span_id.hex() == roots[item["id"]]
        attributes = {a.key: a.value for a in span.attributes}
        assert attributes["openinference.span.kind"].string_value == "EVALUATOR"
        for metric, value in item["scores"].items():
            if value is None:
                assert attributes[f"ragmeter.{metric}.undefined"].string_value == item["undefined"][metric]
            else:
                assert attributes[f"ragmeter.{metric}"].double_value == value
            assert attributes[f"ragmeter.signature.{metric}"].string_value.startswith(metric + "|")


def test_the_written_back_scores_are_themselves_traces_ragmeter_reads(langchain_file, tmp_path: Path) -> None:
    path, _ = langchain_file
    back = tmp_path / "back.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter.cli",
            "run",
            str(path),
            "--out",
            str(tmp_path / "run"),
            "--metrics",
            "abstained",
            "--write-back",
            "otel",
            str(back),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert detect_format(back) == "otel"
    problems = [item for item in ragmeter.iter_records(back) if isinstance(item, ragmeter.InputError)]
    assert len(problems) == 3 and all("no root span" in p.reason for p in problems)  # children of roots not there


def test_the_trace_guides_blocks_run_as_shown_on_a_langchain_export(langchain_file, tmp_path: Path) -> None:
    """The guide "From your traces" (:mod:`site_blocks` runs its blocks) with a real LangChain pipeline's export as
    its ``traces.json``: the scores are written back onto the traces."""
    run_page(
        "From your traces",
        tmp_path,
        PagePlan(given=lambda folder: shutil.copy(langchain_file[0], folder / "traces.json")),
    )
    assert (tmp_path / "scores.otlp.json").stat().st_size > 0
