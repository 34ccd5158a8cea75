"""``--forward``: each scored trace's evaluation span reaches another OTLP/HTTP receiver (here a second ``serve``'s,
a real one on loopback) as a child of the trace's root, with its scores; a receiver that is down delays the spans
and loses none, and a span is sent once."""

from __future__ import annotations

from pathlib import Path

import pytest
from loopback import free_port, running

from ragmeter.io.traces.otlp import SpanRow
from ragmeter.serve.app import create_app
from ragmeter.serve.forward import Forwarder, ForwardError
from ragmeter.serve.scorer import Scorer
from ragmeter.serve.store import SqliteStore


def _scored_store(path: Path, n: int) -> SqliteStore:
    store = SqliteStore(path)
    for k in range(1, n + 1):
        attributes = [
            {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
            {"key": "input.value", "value": {"stringValue": f"When does museum {k} open?"}},
            {"key": "output.value", "value": {"stringValue": f"Museum {k} opens at nine."}},
        ]
        span = {
            "traceId": f"{k:032x}",
            "spanId": f"{k:016x}",
            "name": "rag",
            "startTimeUnixNano": "1000",
            "endTimeUnixNano": "3000",
            "attributes": attributes,
        }
        store.accept({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]})
    assert Scorer(store, metrics=["efficiency"]).score_due() == n
    return store


def test_the_evaluation_spans_reach_the_receiver_once(tmp_path: Path) -> None:
    upstream = _scored_store(tmp_path / "up.sqlite", 3)
    with SqliteStore(tmp_path / "down.sqlite") as downstream, running(create_app(downstream)) as url:
        forwarder = Forwarder(upstream, f"{url}/v1/traces", batch=2)
        assert forwarder.forward_due() == 2 and forwarder.forward_due() == 1 and forwarder.forward_due() == 0
        for outcome in upstream.scored():
            (span,) = [s for s in downstream.spans(outcome.trace_id) if isinstance(s, SpanRow)]
            assert span.name == "ragmeter.evaluation" and span.parent_id == outcome.trace_id[-16:]
            assert span.attributes["ragmeter.latency_ms"] == pytest.approx(outcome.scores["latency_ms"]) == 0.002
            assert span.attributes["ragmeter.total_tokens.undefined"] == outcome.undefined["total_tokens"]
            assert span.attributes["ragmeter.signature.latency_ms"] == outcome.signatures["latency_ms"]
            assert span.attributes["openinference.span.kind"] == "EVALUATOR"
        assert downstream.backlog()["open"] == 3  # three traces, one span each
    upstream.close()


def test_a_receiver_that_is_down_delays_the_spans_and_loses_none(tmp_path: Path) -> None:
    upstream = _scored_store(tmp_path / "up.sqlite", 2)
    port = free_port()
    forwarder = Forwarder(upstream, f"http://127.0.0.1:{port}/v1/traces")
    with pytest.raises(ForwardError, match="did not take the evaluation spans"):
        forwarder.forward_due()
    assert len(upstream.unforwarded(10)) == 2
    with SqliteStore(tmp_path / "down.sqlite") as downstream, running(create_app(downstream)) as url:
        assert Forwarder(upstream, f"{url}/v1/traces").forward_due() == 2
        assert upstream.unforwarded(10) == [] and downstream.backlog()["open"] == 2
    upstream.close()
