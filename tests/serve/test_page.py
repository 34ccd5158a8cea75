"""``ragmeter serve``'s page at ``/``: each metric's table per group holds the means of the stored scores (worked
out here), its figure is drawn, a hostile trace attribute stays text (in the served source and in Chromium), and a
bad query is answered 400."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import close_page, open_page
from loopback import running

from ragmeter.analysis.gate import GateRule
from ragmeter.serve.app import create_app
from ragmeter.serve.drops import WindowCheck, WindowVerdict
from ragmeter.serve.store import ScoredTrace, SqliteStore

HOSTILE = "<script>window.__pwned = 1; alert(1)</script>"
#: (seconds ago, model, route, token_f1): two models over the last six hours.
TRACES = [
    (5_000 + 300 * i, "m1" if i % 2 else HOSTILE, "search" if i < 10 else "chat", 0.1 * (i % 7)) for i in range(20)
]


@pytest.fixture
def page_url(tmp_path: Path) -> Iterator[str]:
    now = time.time()
    with SqliteStore(tmp_path / "store.sqlite") as store:
        for n, (ago, model, route, f1) in enumerate(TRACES, start=1):
            trace = f"{n:032x}"
            span = {
                "traceId": trace,
                "spanId": f"{n:016x}",
                "name": "rag",
                "startTimeUnixNano": "1",
                "endTimeUnixNano": "2",
            }
            store.accept({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}, now=now - ago - 1)
            store.mark_due(quiet_s=1.0, now=now - ago)
            record = {"id": trace, "question": "q", "answer": "a", "metadata": {"model_id": model, "route": route}}
            store.save_scores(
                ScoredTrace(
                    trace,
                    record,
                    None,
                    {"token_f1": f1, "latency_ms": None},
                    {"latency_ms": "no latency"},
                    False,
                    {},
                    now - ago,
                )
            )
        verdict = WindowVerdict(GateRule("token_f1"), "drop", "0.5 → 0.3, Holm-adjusted p = 0.001 < 0.05")
        store.save_check(WindowCheck(now - 600, now - 4200, now - 600, HOSTILE, (verdict,), 0.05).to_dict())
        with running(create_app(store)) as url:
            yield url


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _means(index: int) -> dict[str, float]:
    """Per group (the metadata value at ``index`` of a trace's tuple), the mean token_f1."""
    groups: dict[str, list[float]] = {}
    for trace in TRACES:
        groups.setdefault(trace[index], []).append(trace[3])
    return {group: sum(values) / len(values) for group, values in groups.items()}


def test_the_page_source(page_url: str) -> None:
    status, source = _get(page_url + "/")
    assert status == 200
    assert "<script" not in source and "&lt;script&gt;window.__pwned = 1; alert(1)&lt;/script&gt;" in source
    assert source.count("<svg") == 1  # token_f1's figure; latency_ms has no defined score to draw
    assert (
        "http://" not in source.replace('xmlns="http://www.w3.org/', "").replace('xmlns:xlink="http://www.w3.org/', "")
        and "https://" not in source
    )  # nothing to fetch
    for status, body in (_get(page_url + "/?hours=abc"), _get(page_url + "/?hours=0"), _get(page_url + "/?by=")):
        assert status == 400 and body.startswith("bad query")


def test_the_page_in_chromium(page_url: str) -> None:
    page, errors, dialogs = open_page(page_url + "/?by=route&hours=12")
    try:
        assert errors == [] and dialogs == [] and page.evaluate("window.__pwned") is None
        assert page.locator("#metric-token_f1 + figure svg").count() == 1
        rows = page.locator("#metric-token_f1 ~ table.metric").first.locator("tbody tr").all_inner_texts()
        shown = {row.split("\t")[0]: float(row.split("\t")[3]) for row in rows}
        assert shown == pytest.approx(_means(2), abs=5e-4)
        latency = page.locator("#metric-latency_ms ~ table.metric").first.locator("tbody tr").all_inner_texts()
        assert [row.split("\t")[:4] for row in latency] == [["chat", "0", "10", "—"], ["search", "0", "10", "—"]]
        (check,) = page.locator("#checks tbody tr").all_inner_texts()
        assert check.split("\t")[2:] == [HOSTILE, "token_f1", "drop", "0.5 → 0.3, Holm-adjusted p = 0.001 < 0.05"]
    finally:
        close_page(page)
    page, errors, dialogs = open_page(page_url + "/")
    try:
        assert errors == [] and dialogs == []
        rows = page.locator("#metric-token_f1 ~ table.metric").first.locator("tbody tr").all_inner_texts()
        shown = {row.split("\t")[0]: float(row.split("\t")[3]) for row in rows}
        assert shown == pytest.approx(_means(1), abs=5e-4) and HOSTILE in shown
    finally:
        close_page(page)
