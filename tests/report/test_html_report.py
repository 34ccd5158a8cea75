"""The HTML report as a person sees it: rendered for the demo run and a comparison, opened in headless Chromium
(Debian's ``chromium``; `.ci/run` installs it where it can), with no console error, every table and figure in
place, and hostile text from a record shown as text that runs nothing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from browser import close_page, open_page

from ragmeter import Settings, compare, evaluate, read_records
from ragmeter.analysis.compare import ScoredRun
from ragmeter.cli import main
from ragmeter.io.demo import demo_path
from ragmeter.report.html import render_comparison_html, render_html

SCRIPT = "<script>window.__pwned = 1; alert(1)</script>"
IMAGE = '"><img src=x onerror="window.__pwned = 2">'
SETTINGS = Settings(embedder="hashing", n_resamples=200)


def _hostile_records() -> list[Any]:
    """The demo, led by a record whose id, question, answer and chunk carry markup (its Overlap is 0, so it is
    among the worst items of every metric it scores low on)."""
    records = list(read_records(demo_path()))
    first = records[0]
    chunk = dataclasses.replace(first.contexts[0], doc_id="lib-hours", text=f"Opening hours {SCRIPT}")
    hostile = dataclasses.replace(
        first,
        id=f"x{IMAGE}",
        question=f"When {SCRIPT}?",
        answer=f"It opens {SCRIPT} {IMAGE}",
        contexts=(chunk, *first.contexts[1:]),
        metadata={**first.metadata, "conversation_id": "x"},
    )
    return [hostile, *records]


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("html")
    records = _hostile_records()
    result = evaluate(records, settings=SETTINGS)
    run_page = folder / "run.html"
    run_page.write_text(render_html(result, title=f"demo {SCRIPT}", records=records), encoding="utf-8")
    gate_records = list(read_records(demo_path("gate")))
    runs = [
        ScoredRun.from_result(evaluate(batch, settings=SETTINGS), name=name, records=batch)
        for name, batch in (("v1", records[1:]), ("gate", gate_records))
    ]
    comparison_page = folder / "compare.html"
    comparison_page.write_text(render_comparison_html(compare(*runs), title="gate vs v1"), encoding="utf-8")
    return {"run": run_page, "compare": comparison_page}


def test_record_text_is_escaped_in_the_source(pages: dict[str, Path]) -> None:
    source = pages["run"].read_text(encoding="utf-8")
    assert "<script" not in source and "onerror=" not in source.replace("onerror=&#34;", "")
    assert "&lt;script&gt;window.__pwned = 1; alert(1)&lt;/script&gt;" in source
    assert (
        "http://" not in source.replace('xmlns="http://www.w3.org/', "").replace('xmlns:xlink="http://www.w3.org/', "")
        and "https://" not in source
    )  # nothing to fetch
    assert len(source) < 1_000_000


def test_the_run_report_in_chromium(pages: dict[str, Path]) -> None:
    page, errors, dialogs = open_page(pages["run"].as_uri())
    try:
        assert errors == [] and dialogs == []
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img").count() == 0  # the injected <img> is no element
        for table in ("#primary", "#appendix", "#quadrant", "#undefined"):
            assert page.locator(f"{table} tbody tr").count() >= 1, table
        for figure in ("#score-figure", "#quadrant-figure", "#distributions"):
            assert page.locator(f"{figure} svg").count() == 1, figure
        worst = page.locator("details.worst[data-metric='overlap']")
        assert SCRIPT in worst.inner_text() and IMAGE in worst.inner_text()  # shown as the text it is
        assert page.title() == f"demo {SCRIPT}"
    finally:
        close_page(page)


def test_the_comparison_in_chromium(pages: dict[str, Path]) -> None:
    page, errors, dialogs = open_page(pages["compare"].as_uri())
    try:
        assert errors == [] and dialogs == []
        assert page.locator("figure.forest svg").count() == 1
        assert page.locator("table.comparison").count() >= 2  # all items, then each answerability
        assert page.locator("table.gate tbody tr").count() == 2
        rows = page.locator("table.comparison").first.locator("tbody tr").all_inner_texts()
        assert any(row.startswith("total_tokens") for row in rows)
    finally:
        close_page(page)


def test_the_commands_write_the_pages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for variant, name in (([], "v1"), (["gate"], "gate")):
        assert (
            main(
                [
                    "run",
                    "--demo",
                    *variant,
                    "--embedder",
                    "hashing",
                    "--out",
                    str(tmp_path / name),
                    "--html",
                    str(tmp_path / f"{name}.html"),
                    "--format",
                    "json",
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                str(tmp_path / "v1"),
                str(tmp_path / "gate"),
                "--html",
                str(tmp_path / "c.html"),
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)[0]["n_pairs"] == 45
    page = (tmp_path / "v1.html").read_text(encoding="utf-8")
    assert "What time does the Central Library close on Fridays?" in page  # a worst item, from the input
    assert 'id="primary"' in (tmp_path / "gate.html").read_text(encoding="utf-8")
    assert "gate (B) against v1 (A)" in (tmp_path / "c.html").read_text(encoding="utf-8")
    (tmp_path / "file").write_text("in the way", encoding="utf-8")
    assert main(["run", "--demo", "--out", str(tmp_path / "x"), "--html", str(tmp_path / "file" / "r.html")]) == 2
    assert "cannot be written" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_a_judged_run_shows_the_judges_work_failures_and_cost() -> None:
    from ragmeter.judges import Judge, ScriptedBackend

    def reply(request: Any) -> str:
        fridays = any("Fridays" in content for _, content in request.messages)  # the repair too
        if request.schema_name == "relevance":
            return "not JSON" if fridays else '{"reason": "on topic", "score": 4}'
        return '{"reason": "close", "score": 3}'

    records = list(read_records(demo_path()))[:3]
    with Judge(ScriptedBackend(reply)) as judge:
        result = evaluate(records, metrics=["judge_relevance", "judge_correctness"], settings=SETTINGS, judge=judge)
    page = render_html(result, title="judged", records=records, prices=(1.0, 2.0))
    assert 'id="judge"' in page and 'id="judge-failures"' in page
    assert "invalid reply after one repair attempt" in page and "q01" in page  # q01 asks about Fridays
    assert "Cost this run:" in page and "per million prompt / completion tokens" in page
