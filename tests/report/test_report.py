"""The terminal report: the configured confidence in its headers, readable large numbers, the malformed
citation count, and a footnote for intervals that deserve caution."""

from __future__ import annotations

from ragmeter import HashingEmbedder, Settings, evaluate, render_report

RECORDS = [
    {
        "id": f"q{i}",
        "question": "When does it open?",
        "answer": answer,
        "references": ["9 am"],
        "contexts": [{"doc_id": "d1", "text": "It opens at 9 am."}],
        "latency_ms": latency,
    }
    for i, (answer, latency) in enumerate(
        [
            ("It opens at 9 am [CIT:d1].", 450_000_000.0),  # 5.2 days: valid, but a 9-digit figure
            ("It opens at 9 am [cit:d1]. Or at ten [CIT:d1.", 150_000.0),  # two malformed markers
            ("Nine [CIT d1], I think [CIT:].", 12.0),  # two more
        ]
    )
]


def report(**settings: object) -> str:
    result = evaluate(
        RECORDS,
        metrics=["malformed_citation_count", "latency_ms", "token_f1"],
        embedder=HashingEmbedder(),
        settings=Settings(n_resamples=200, **settings),
    )  # type: ignore[arg-type]
    return render_report(result, title="t")


def test_headers_show_the_configured_confidence() -> None:
    text = report(confidence=0.9)
    assert "90% CI" in text and "Intervals: 90%;" in text
    assert "95%" not in text
    assert "95% CI" in report()


def test_large_values_are_readable() -> None:
    text = report()
    p95 = next(line for line in text.splitlines() if line.startswith("P95 latency"))
    # numpy's linear P95 of (12, 150000, 450000000): 150000 + 0.9·(450000000 − 150000) = 405,015,000
    assert "405,015,000" in p95


def test_malformed_markers_are_counted_in_the_appendix() -> None:
    line = next(line for line in report().splitlines() if line.startswith("Malformed [CIT]"))
    assert line.split()[5] == "4" and "← contract violated" in line  # label, then the value


def test_an_interval_over_few_conversations_gets_a_footnote() -> None:
    records = [{**r, "metadata": {"conversation_id": "c1"}} for r in RECORDS]
    result = evaluate(records, metrics=["token_f1"], settings=Settings(n_resamples=200))
    text = render_report(result, title="t")
    row = next(line for line in text.splitlines() if line.startswith("F1"))
    assert row.endswith("*")
    assert "* only 1 conversation(s): the interval resamples items" in text


def test_control_characters_in_user_text_are_shown_as_escapes() -> None:
    """An id holding ESC [2J (clear screen), a carriage return and a bell reaches the reports as the escapes
    ``\\x1b[2J``, ``\\r`` and ``\\x07``; a C1 control (0x9b, a one-byte CSI) too; Indonesian and CJK text stays."""
    from ragmeter.report.markdown import render_report_markdown
    from ragmeter.report.terminal import visible

    assert visible("a\x1b[2J\r\x07b\x9bc\x7f\t\nü答") == "a\\x1b[2J\\r\\x07b\\x9bc\\x7f\\t\\nü答"
    evil = "q\x1b[2J\r\x07"
    records = [
        {**RECORDS[0], "id": evil, "latency_ms": 10.0},
        {**RECORDS[0], "id": "jawaban-答案", "answer": "Sembilan pagi.", "latency_ms": 20.0},
    ]
    result = evaluate(
        records,
        metrics=["overlap", "faithfulness_fallback", "abstained", "token_f1"],
        embedder=HashingEmbedder(),
        settings=Settings(n_resamples=200),
    )
    for text in (render_report(result, title="run \x9b31m"), render_report_markdown(result, title="run \x9b31m")):
        assert not any(c in text for c in "\x1b\r\x07\x9b")
        assert "q\\x1b[2J\\r\\x07" in text and "jawaban-答案" in text and "run \\x9b31m" in text


def test_the_primary_table_leads_with_the_faithfulness_that_agrees_with_people_and_says_how_far() -> None:
    from ragmeter.metrics import get_metric
    from ragmeter.report.markdown import render_report_markdown

    result = evaluate(
        RECORDS,
        metrics=["faithfulness_fallback", "faithfulness_offline", "token_f1"],
        embedder=HashingEmbedder(),
        settings=Settings(n_resamples=200),
    )
    text = render_report(result, title="t")
    lines = text.splitlines()
    offline = next(i for i, line in enumerate(lines) if line.startswith("Faithfulness (offline, IDK)"))
    fallback = next(i for i, line in enumerate(lines) if line.startswith("Faithfulness (fallback)"))
    assert offline < fallback
    agreement = get_metric("faithfulness_offline").agreement
    assert agreement is not None and "cross-collection on MT-RAG dev" in agreement
    assert " ".join(line.strip() for line in lines[fallback:] if line.startswith("  ")).startswith(
        f"faithfulness_offline {agreement}"
    )
    assert get_metric("faithfulness_fallback").agreement is None  # never measured: nothing said
    assert f"- `faithfulness_offline` {agreement}" in render_report_markdown(result, title="t")
    from ragmeter.report.html import render_html

    assert f'<p class="agreement"><code>faithfulness_offline</code> {agreement}</p>' in render_html(result, title="t")
