"""An Arize Phoenix span export produced at test time: a Phoenix server on loopback receives the spans of the
LlamaIndex and LangChain pipelines over OTLP/HTTP, Phoenix's own client fetches its spans DataFrame, saved as
Parquet and as JSON lines as a user would; ragmeter reads both as the records the pipelines saw, and as the records
it reads from the same spans written as OTLP JSON in the same run; ``ragmeter run`` scores the export with no
mapping flag."""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from trace_producers import (
    OtlpJsonLinesExporter,
    TeeExporter,
    Turn,
    records_match,
    run_langchain,
    run_llama_index,
)

import ragmeter

if TYPE_CHECKING:
    import pandas as pd

#: Seconds the server may take to answer its health check (about 20 on a laptop: it migrates a new database).
START_S = 180
#: Seconds Phoenix may take to list every span it was sent (it ingests them from a queue).
INGEST_S = 60
LLAMA_QUESTIONS = [
    ("p-1", "What is the capital of France?"),
    ("p-1", "And the capital of Germany?"),
    ("p-2", "What is the capital of Italy?"),
]
LANGCHAIN_QUESTIONS = [
    ("c-1", "What is the capital of Germany?"),
    ("c-2", "What is the capital of Spain?"),
    ("c-1", "And the capital of France?"),
]


@dataclass(frozen=True)
class Export:
    """One run of both pipelines: Phoenix's spans DataFrame as ``parquet`` and as JSON lines with times as numbers
    (``jsonl``, ``to_json``'s default in pandas 3) or as ISO 8601 text (``iso_jsonl``), the same spans as OTLP JSON
    lines (``otlp``), and the pipelines' turns in the order they ran."""

    parquet: Path
    jsonl: Path
    iso_jsonl: Path
    otlp: Path
    turns: list[Turn]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _log_tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-3000:]


@contextmanager
def phoenix_server(workdir: Path) -> Iterator[str]:
    """A Phoenix server on loopback (its database in ``workdir``, telemetry off), up within :data:`START_S`
    seconds; yields its base URL and stops it afterwards, killing it if it does not stop."""
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_SQL_DATABASE_URL": f"sqlite:///{workdir / 'phoenix.db'}",
    }
    log = workdir / "phoenix.log"
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "phoenix.server.main", "serve"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + START_S
            while not _healthy(base):
                if server.poll() is not None:
                    raise RuntimeError(f"Phoenix exited with {server.returncode}:\n{_log_tail(log)}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Phoenix did not answer within {START_S} s:\n{_log_tail(log)}")
                time.sleep(0.5)
            yield base
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=20)


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _span_count(otlp: Path) -> int:
    return sum(
        len(scope["spans"])
        for line in otlp.read_text(encoding="utf-8").splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
    )


def _spans_dataframe(base: str, expected: int) -> pd.DataFrame:
    """Phoenix's spans DataFrame of the default project once it lists ``expected`` spans."""
    from phoenix.client import Client

    client = Client(base_url=base)
    deadline = time.monotonic() + INGEST_S
    while True:
        frame = client.spans.get_spans_dataframe(project_identifier="default", limit=10_000)
        if len(frame) >= expected or time.monotonic() > deadline:
            assert len(frame) == expected, f"Phoenix lists {len(frame)} spans of the {expected} sent"
            return frame
        time.sleep(0.5)


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Export:
    folder = tmp_path_factory.mktemp("phoenix")
    otlp = folder / "traces.otlp.jsonl"
    # Phoenix's client takes about 10 s to import: it is imported while the server starts
    importing = threading.Thread(target=importlib.import_module, args=("phoenix.client",))
    importing.start()
    with phoenix_server(folder) as base:
        endpoint = f"{base}/v1/traces"
        turns = run_llama_index(
            TeeExporter(OTLPSpanExporter(endpoint=endpoint, timeout=10), OtlpJsonLinesExporter(otlp)),
            [Turn(session, question) for session, question in LLAMA_QUESTIONS],
        )
        turns += run_langchain(
            TeeExporter(OTLPSpanExporter(endpoint=endpoint, timeout=10), OtlpJsonLinesExporter(otlp)),
            [Turn(session, question) for session, question in LANGCHAIN_QUESTIONS],
        )
        importing.join()
        frame = _spans_dataframe(base, _span_count(otlp))
    frame.to_parquet(folder / "spans.parquet")
    frame.to_json(folder / "spans.jsonl", orient="records", lines=True)  # pandas 3 warns that its default changes
    frame.to_json(folder / "spans.iso.jsonl", orient="records", lines=True, date_format="iso", date_unit="ns")
    return Export(folder / "spans.parquet", folder / "spans.jsonl", folder / "spans.iso.jsonl", otlp, turns)


@pytest.mark.parametrize("kind", ["parquet", "jsonl", "iso_jsonl"])
def test_a_phoenix_export_is_read_as_the_records_the_pipelines_saw(export: Export, kind: str) -> None:
    records = records_match(getattr(export, kind), export.turns, "phoenix")
    assert [r.model_id for r in records[:3]] == ["counting-llm"] * 3


@pytest.mark.parametrize(("kind", "within_ms"), [("parquet", 0.002), ("jsonl", 2.0), ("iso_jsonl", 0.002)])
def test_a_phoenix_export_and_the_otlp_json_of_the_same_spans_are_the_same_records(
    export: Export, kind: str, within_ms: float
) -> None:
    """Field by field, but for what an export lacks (resource attributes) or rounds: Phoenix keeps times to the
    microsecond (``to_json`` writes numbers to the millisecond) and its database keeps 15 digits of a score."""
    from_phoenix = list(ragmeter.read_records(getattr(export, kind)))
    from_otlp = list(ragmeter.read_records(export.otlp))
    assert len(from_phoenix) == len(from_otlp) == len(export.turns)
    for phoenix, otlp in zip(from_phoenix, from_otlp, strict=True):
        assert phoenix.latency_ms == pytest.approx(otlp.latency_ms, abs=within_ms)
        scores = otlp.metadata.get("retrieval_scores")
        assert phoenix.metadata.get("retrieval_scores") == (
            None if scores is None else pytest.approx(scores, rel=1e-14)
        )
        assert any(key.startswith("resource.") for key in otlp.metadata)
        kept = {k: v for k, v in otlp.metadata.items() if not k.startswith("resource.") and k != "retrieval_scores"}
        assert replace(phoenix, latency_ms=None, metadata={**phoenix.metadata, "retrieval_scores": None}) == replace(
            otlp, latency_ms=None, metadata={**kept, "retrieval_scores": None}
        )


def test_ragmeter_run_scores_a_phoenix_export_with_no_mapping_flag(export: Export, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter.cli",
            "run",
            str(export.parquet),
            "--out",
            str(tmp_path / "run"),
            "--phoenix-retrieval",
            "all",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "overlap" in done.stdout and "total_tokens" in done.stdout and "latency_ms" in done.stdout
    items = (tmp_path / "run" / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(items) == len(export.turns)


def test_an_export_read_as_plain_parquet_or_jsonl_is_one_error_naming_the_phoenix_format(export: Export) -> None:
    for path, kind in ((export.parquet, "parquet"), (export.jsonl, "native")):
        (error,) = ragmeter.iter_records(path, format=kind)
        assert isinstance(error, ragmeter.InputError)
        assert "context.trace_id and context.span_id" in error.reason
        assert "pass --input-format phoenix" in error.reason


def test_a_row_that_cannot_be_read_is_an_error_of_its_line_and_its_trace_still_a_record(
    export: Export, tmp_path: Path
) -> None:
    rows = [json.loads(line) for line in export.jsonl.read_text(encoding="utf-8").splitlines()]
    child = next(i for i, row in enumerate(rows) if row["parent_id"])
    rows[child]["context.span_id"] = "not-an-id"
    broken = tmp_path / "spans.jsonl"
    broken.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    items = list(ragmeter.iter_records(broken))
    errors = [item for item in items if isinstance(item, ragmeter.InputError)]
    assert [(e.line, e.field) for e in errors] == [(child + 1, "context.span_id")]
    assert "'not-an-id'" in errors[0].reason
    assert len(items) - len(errors) == len(export.turns)
