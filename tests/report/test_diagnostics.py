"""Where the pipeline fails: the claim-level diagnostics read by stage, in the terminal, Markdown and HTML reports."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragmeter import Settings, evaluate
from ragmeter.judges import Judge, ScriptedBackend
from ragmeter.metrics import get_metric
from ragmeter.report.markdown import render_report_markdown
from ragmeter.report.terminal import render_report
from ragmeter.results.diagnostics import GENERATOR, RETRIEVER, pipeline_diagnostics
from ragmeter.testing.scripted_judge import reply_to

QUESTION = "When does the museum open and close?"
REFERENCE = "The museum opens at 9:00. It closes at 17:00. Entry is free."
CHUNKS = [
    {"doc_id": "c1", "text": "The museum opens at 9:00 on weekdays."},
    {"doc_id": "c2", "text": "Parking costs 3 dollars."},
]
RECORDS = [
    # states the vital nugget, which chunk 1 holds: no vital nugget lost
    {
        "id": "A",
        "question": QUESTION,
        "answer": "The museum opens at 9:00. Parking costs 3 dollars.",
        "references": [REFERENCE],
        "contexts": CHUNKS,
    },
    # people's nuggets, both vital: misses "Entry is free", which its chunk holds (the generator lost it)
    {
        "id": "B",
        "question": "Is entry free?",
        "answer": "The museum closes at 17:00.",
        "nuggets": ["The museum closes at 17:00", "Entry is free"],
        "contexts": [{"doc_id": "c3", "text": "Entry is free for everyone."}],
    },
    # the scripted judge quotes words the answer lacks: every grade counts none, chunk 1 held the vital one
    {"id": "C", "question": QUESTION, "answer": "FAKE QUOTE here.", "references": [REFERENCE], "contexts": CHUNKS},
    # misses both of people's vital nuggets, which no chunk holds (the retriever lost them)
    {
        "id": "D",
        "question": "Where is it?",
        "answer": "It is a museum.",
        "nuggets": ["The museum is on Main Street", "The museum is near the station"],
        "contexts": [{"doc_id": "c4", "text": "Parking costs 3 dollars."}],
    },
]


@pytest.fixture(scope="module")
def result():
    with Judge(ScriptedBackend(reply_to), claims="verify") as judge:
        # the judge writes A's and C's nuggets (the scripted judge: a reference's first sentence vital)
        settings = Settings(n_resamples=200, nugget_source="judge")
        return evaluate(RECORDS, metrics=["claim_level"], judge=judge, settings=settings)


def test_the_stages_hold_the_runs_own_figures_in_order(result) -> None:
    diagnostics = pipeline_diagnostics(result.summaries)
    assert [title for title, _ in diagnostics.stages] == ["Retriever", "Generator", "Lost vital nuggets"]
    assert [s.metric for _, s in diagnostics.retriever] == [m for m, _ in RETRIEVER]
    assert [s.metric for _, s in diagnostics.generator] == [m for m, _ in GENERATOR]
    failures = {s.metric: s for _, s in diagnostics.failures}
    # by hand: lost at retrieval by D only; at generation by B and C (of four answers, each with a vital nugget)
    assert (failures["retrieval_failure"].value, failures["generation_failure"].value) == (0.25, 0.5)
    assert failures["retrieval_failure"].n == failures["generation_failure"].n == 4
    assert (
        diagnostics.reading == "The two intervals overlap: this run does not tell which stage loses more vital nuggets."
    )
    assert pipeline_diagnostics([s for s in result.summaries if s.family != "claim_level"]) is None


def test_the_reading_names_a_stage_only_when_the_intervals_part(result) -> None:
    by_metric = {s.metric: s for s in result.summaries}
    retrieval = replace(by_metric["retrieval_failure"], value=0.7, ci_low=0.6, ci_high=0.8)
    generation = replace(by_metric["generation_failure"], value=0.2, ci_low=0.1, ci_high=0.3)
    assert pipeline_diagnostics([retrieval, generation]).reading.endswith("the retriever first.")
    assert pipeline_diagnostics(
        [replace(retrieval, ci_low=0.0, ci_high=0.2), replace(generation, ci_low=0.5, ci_high=0.9)]
    ).reading.endswith("the generator first.")
    none = replace(retrieval, value=float("nan"), ci_low=float("nan"), ci_high=float("nan"), n=0)
    assert pipeline_diagnostics([none, generation]).reading == (
        "No answer has a failure share (no vital nugget, or nuggets written from the retrieved chunks): the failure "
        "shares are undefined."
    )
    assert "needs both" in pipeline_diagnostics([retrieval]).reading
    zero = {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0}
    assert pipeline_diagnostics([replace(retrieval, **zero), replace(generation, **zero)]).reading == (
        "No answer lost a vital nugget, in retrieval or in generation."
    )
    unknown = replace(generation, ci_low=None, ci_high=None)
    assert pipeline_diagnostics([retrieval, unknown]).reading.startswith("The failure shares have no interval")


def test_the_terminal_report_shows_each_stage_once_with_its_interval(result) -> None:
    text = render_report(result, title="t")
    retriever = text.index("Where it fails: retriever")
    assert retriever < text.index("Where it fails: generator") < text.index("Where it fails: lost vital nuggets")
    row = next(line for line in text.splitlines() if line.startswith("generation_failure"))
    summary = next(s for s in result.summaries if s.metric == "generation_failure")
    assert f"[{summary.ci_low:.3f}, {summary.ci_high:.3f}]" in row and row.endswith("(lost by the generator)")
    rows = [line for line in text.splitlines() if line.startswith("context_claim_recall")]
    assert len(rows) == 1  # not again under the claim-level family
    family = text[text.index("Claim level") :]
    assert "nugget_recall (mean)" in family
    # each measured metric's agreement with people follows its family's section
    assert "\n  nugget_recall follows people's completeness" in family  # the line is wrapped to the terminal:
    assert "".join(f"nugget_recall {get_metric('nugget_recall').agreement}".split()) in "".join(family.split())
    assert "this run does not tell which stage" in text


def test_markdown_and_html_show_the_stages(result) -> None:
    markdown = render_report_markdown(result, title="t")
    assert "## Where the pipeline fails" in markdown and "### Lost vital nuggets" in markdown
    assert "| `hallucination` |" in markdown
    pytest.importorskip("jinja2", reason="the HTML report is the html extra's")
    pytest.importorskip("matplotlib", reason="the HTML report is the html extra's")
    from ragmeter.report.html import render_html

    page = render_html(result, title="t")
    assert '<table class="diagnostics" data-stage="Retriever">' in page and 'id="diagnostics-figure"' in page
    assert "<td>claim_context_precision</td>" in page
    other = page[page.index('<table id="other">') :]
    assert "nugget_recall (mean)" in other[: other.index("</table>")]
    assert "context_claim_recall" not in other[: other.index("</table>")]  # shown in its stage only
