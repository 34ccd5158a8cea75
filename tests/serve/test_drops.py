"""Drops: a window of stored scores against the window before or a stored run, with the gate's rules; the
figures worked out apart (means by hand, p-values by the permutation test and Holm called directly), a check
stored, a drop POSTed to a real loopback webhook, and its gauges at ``/metrics``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ragmeter.analysis.gate import GateRule, parse_rule
from ragmeter.core.errors import ConfigError
from ragmeter.serve import drops
from ragmeter.serve.drops import DropWatch, Sample, WatchSettings, check_window
from ragmeter.serve.prometheus import StoreCollector
from ragmeter.serve.store import ScoredTrace, SqliteStore
from ragmeter.stats.paired import holm
from ragmeter.stats.unpaired import permutation_test

RNG = np.random.default_rng(0)
BEFORE = RNG.uniform(0.4, 0.9, size=60)
LATENCY = RNG.uniform(800, 1200, size=60)
RULES = (GateRule("token_f1"),)


def _sample(label: str, **scores: np.ndarray) -> Sample:
    return Sample(
        label,
        {m: np.asarray(v, float) for m, v in scores.items()},
        {m: tuple(f"{label}-{i}" for i in range(len(v))) for m, v in scores.items()},
    )


def test_a_drop_is_found_and_its_figures_are_the_samples() -> None:
    after = BEFORE - 0.2
    (verdict,) = check_window(
        _sample("now", token_f1=after), _sample("before", token_f1=BEFORE), [GateRule("token_f1")]
    )
    assert verdict.status == "drop" and verdict.n_baseline == verdict.n_window == 60
    assert verdict.difference == pytest.approx(after.mean() - BEFORE.mean()) == pytest.approx(-0.2)
    assert verdict.ci_low < -0.2 < verdict.ci_high < 0
    assert verdict.p_holm == permutation_test(BEFORE, after) < 0.05
    assert "Holm-adjusted p" in verdict.reason


def test_the_same_scores_raise_no_alarm_and_holm_counts_every_watched_metric() -> None:
    window = _sample("now", token_f1=BEFORE[::-1] - 0.05, rouge_l=BEFORE)
    baseline = _sample("before", token_f1=BEFORE, rouge_l=BEFORE)
    f1, rouge = check_window(window, baseline, [GateRule("token_f1"), GateRule("rouge_l")])
    clusters = {"clusters_a": baseline.clusters["token_f1"], "clusters_b": window.clusters["token_f1"]}
    raw = [permutation_test(BEFORE, BEFORE[::-1] - 0.05, **clusters), permutation_test(BEFORE, BEFORE, **clusters)]
    assert [f1.p_holm, rouge.p_holm] == holm(raw)
    assert rouge.status == "passed" and rouge.difference == 0 and "not worse" in rouge.reason
    assert f1.status == ("drop" if holm(raw)[0] < 0.05 else "passed")


def test_lower_is_better_and_margins() -> None:
    slower = _sample("now", latency_ms=LATENCY * 1.3)
    (verdict,) = check_window(slower, _sample("before", latency_ms=LATENCY), [GateRule("latency_ms")])
    assert verdict.status == "drop" and verdict.difference > 0
    window, baseline = _sample("now", token_f1=BEFORE - 0.02), _sample("before", token_f1=BEFORE)
    (wide,) = check_window(window, baseline, [parse_rule("token_f1:0.2")])
    (narrow,) = check_window(window, baseline, [parse_rule("token_f1:0.01")])
    assert wide.status == "passed" and wide.ci_low > -0.2 and "at most 0.2 worse" in wide.reason
    assert narrow.status == "drop" and narrow.ci_low < -0.01 and "not shown to be at most 0.01 worse" in narrow.reason
    assert np.isnan(wide.p_holm)


def test_too_few_or_too_many_undefined_scores_are_unmeasured() -> None:
    few = _sample("now", token_f1=BEFORE[:10] - 0.3)
    (verdict,) = check_window(few, _sample("before", token_f1=BEFORE), [GateRule("token_f1")])
    assert verdict.status == "unmeasured" and "10 defined scores" in verdict.reason
    holes = BEFORE.copy()
    holes[:20] = np.nan
    (verdict,) = check_window(
        _sample("now", token_f1=holes), _sample("before", token_f1=BEFORE), [GateRule("token_f1")], max_undefined=0.2
    )
    assert verdict.status == "unmeasured" and "undefined on 20 of 60 traces" in verdict.reason
    (verdict,) = check_window(_sample("now"), _sample("before", token_f1=BEFORE), [GateRule("token_f1")])
    assert verdict.status == "unmeasured" and "0 defined scores" in verdict.reason


def _fill(store: SqliteStore, start: float, values: np.ndarray, prefix: str) -> None:
    """Traces scored one a second from ``start``, with ``token_f1`` of ``values``, two turns a conversation."""
    for i, value in enumerate(values):
        trace = f"{prefix}{i:031x}"
        span = {
            "traceId": trace,
            "spanId": f"{i + 1:016x}",
            "name": "rag",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
        }
        store.accept({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}, now=start + i - 1)
        store.mark_due(quiet_s=1.0, now=start + i)
        record = {
            "id": trace,
            "question": "q",
            "answer": "a",
            "conversation_id": f"{prefix}-{i // 2}",
            "metadata": {"model_id": "m1"},
        }
        store.save_scores(ScoredTrace(trace, record, None, {"token_f1": float(value)}, {}, False, {}, start + i))


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        self.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Hook.received = []
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


def _gauges(store: SqliteStore) -> dict[tuple[str, tuple], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store))
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }


def test_the_watch_checks_the_window_before_stores_posts_and_exports_a_drop(tmp_path: Path, webhook: str) -> None:
    with SqliteStore(tmp_path / "store.sqlite") as store:
        _fill(store, 1_000.0, BEFORE, "a")  # scored at 1,000 … 1,059
        _fill(store, 1_100.0, BEFORE - 0.25, "b")  # scored at 1,100 … 1,159
        watch = DropWatch(store, WatchSettings(RULES, 100.0, 50.0, webhook=webhook))
        check = watch.due(now=1_200.0)
        assert check is not None and check.status == "drop" and watch.due(now=1_249.0) is None
        (verdict,) = check.verdicts
        assert verdict.n_window == verdict.n_baseline == 60
        assert verdict.difference == pytest.approx(-0.25)
        assert _Hook.received == [check.to_dict()]
        (stored,) = store.checks()
        assert stored["status"] == "drop" and stored["notified"].startswith(f"POSTed to {webhook}: HTTP 204")
        gauges = _gauges(store)
        rule = (("metric", "token_f1"), ("mode", "regression"))
        assert gauges[("ragmeter_drop", rule)] == 1.0 and gauges[("ragmeter_drop_unmeasured", rule)] == 0.0
        assert gauges[("ragmeter_drop_difference", rule)] == pytest.approx(-0.25)
        assert gauges[("ragmeter_drop_check_timestamp_seconds", ())] == 1_200.0
        # 50 s on: the window (1,150 … 1,250) holds 10 traces: too few to tell, said so, nothing POSTed
        later = watch.due(now=1_250.0)
        assert later is not None and later.status == "unmeasured" and len(_Hook.received) == 1
        assert _gauges(store)[("ragmeter_drop", rule)] == 0.0
        # a watch started again goes on from the stored checks' times
        assert DropWatch(store, WatchSettings(RULES, 100.0, 50.0)).due(now=1_299.0) is None


def test_a_stored_run_as_the_baseline(tmp_path: Path) -> None:
    from ragmeter.analysis.compare import ScoredRun

    run = ScoredRun(
        "v1",
        tuple((f"q{i}", None) for i in range(60)),
        {"token_f1": BEFORE},
        {},
        tuple(f"c{i // 3}" for i in range(60)),
        tuple({} for _ in range(60)),
    )
    with SqliteStore(tmp_path / "store.sqlite") as store:
        _fill(store, 1_000.0, BEFORE, "a")
        check = DropWatch(store, WatchSettings(RULES, 100.0, 50.0, baseline=run)).check(1_060.0)
    assert check.baseline == "v1" and check.verdicts[0].difference == pytest.approx(0.0)
    assert check.status == "passed"


def test_a_dead_webhook_is_recorded_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drops, "WEBHOOK_WAIT_S", 0.0)
    with SqliteStore(tmp_path / "store.sqlite") as store:
        _fill(store, 1_000.0, BEFORE, "a")
        _fill(store, 1_100.0, BEFORE - 0.25, "b")
        watch = DropWatch(
            store, WatchSettings(RULES, 100.0, 50.0, webhook="http://127.0.0.1:9/hook")
        )  # the discard port: nothing listens
        assert watch.check(1_200.0).status == "drop"
        assert store.checks()[0]["notified"].startswith("not delivered to http://127.0.0.1:9/hook after 3 tries")


def test_what_a_watch_refuses() -> None:
    for rules, options, message in (
        ((), {}, "at least one --fail-on rule"),
        ((GateRule("abstained"),), {}, "has no direction"),
        (RULES, {"window_s": 0.0}, "positive durations"),
        (RULES, {"alpha": 1.5}, "alpha 1.5"),
        (RULES, {"min_traces": 1}, "at least 2 scores a side"),
        (RULES, {"webhook": "ftp://x"}, "http:// or https://"),
    ):
        with pytest.raises(ConfigError, match=message):
            WatchSettings(rules, **{"window_s": 60.0, "every_s": 60.0, **options})
