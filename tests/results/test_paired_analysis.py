"""Seeds 000/001's paired analysis: the grounded × correct table and the gate's figures, worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ragmeter import ConfigError
from ragmeter.cli import main
from ragmeter.results.paired import Threshold, default_thresholds, gate_row, grounding_quadrant

NAN = math.nan
IDS = ["a", "b", "c", "d", "e", "f", "g"]
SCORES = {
    "overlap": np.array([0.9, 0.8, 0.2, 0.1, 1.0, NAN, 0.7]),
    "token_f1": np.array([0.7, 0.1, 0.6, 0.0, 0.0, 0.9, 0.5]),
    "abstained": np.array([0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
}


def test_the_quadrant_counts_answers_by_cell_and_leaves_out_refusals_and_undefined_values() -> None:
    q = grounding_quadrant(IDS, SCORES, Threshold("overlap", 0.5), Threshold("token_f1", 0.5))
    # a (0.9, 0.7) and g (0.7, 0.5: a threshold is reached at equality) grounded and correct; b grounded only;
    # c correct only; d neither; e abstains; f has no overlap
    assert (q.n, q.n_abstained, q.n_left_out) == (5, 1, 1)
    counts = {cell: (c.count, c.example) for cell, c in q.cells.items()}
    assert counts == {
        (True, True): (2, "a"),
        (True, False): (1, "b"),
        (False, True): (1, "c"),
        (False, False): (1, "d"),
    }
    assert q.cells[(True, True)].share == pytest.approx(2 / 5)
    assert q.signature.startswith("paired_analysis|grounded:overlap≥0.5|correct:token_f1≥0.5|")


def test_thresholds_parse_and_default_to_the_runs_metrics() -> None:
    assert Threshold.parse("token_f1:0.4") == Threshold("token_f1", 0.4)
    assert Threshold.parse("exact_match") == Threshold("exact_match", 1.0)
    with pytest.raises(ConfigError, match="with a number"):
        Threshold.parse("token_f1:high")
    assert default_thresholds(["overlap", "faithfulness_fallback", "exact_match"]) == (
        Threshold("faithfulness_fallback", 0.8),
        Threshold("exact_match", 1.0),
    )
    # the fallback of an answer is 0.6 + 0.4·Overlap, so its default is Overlap's 0.5 on that scale
    assert Threshold.parse("faithfulness_fallback") == Threshold("faithfulness_fallback", 0.8)
    assert Threshold.parse("overlap") == Threshold("overlap", 0.5)
    assert default_thresholds(["overlap", "rouge_l"]) is None
    with pytest.raises(ConfigError, match="reads judge_faithfulness, which this run did not compute"):
        grounding_quadrant(IDS, SCORES, Threshold("judge_faithfulness", 0.5), Threshold("token_f1", 0.5))


def test_the_gate_row_weighs_answers_against_what_they_cost() -> None:
    scores = {
        "abstained": np.array([0.0, 1.0, 0.0, 0.0]),
        "total_tokens": np.array([1000.0, 0.0, 3000.0, NAN]),
        "latency_ms": np.array([100.0, 20.0, 300.0, 200.0]),
    }
    row = gate_row("gate", scores)
    assert row is not None
    assert (row.n, row.abstain_rate) == (4, 0.25)
    assert row.tokens_per_item == pytest.approx(4000 / 3)  # the item without usage left out
    assert row.tokens_per_answered == pytest.approx(2000.0)
    assert row.p50_latency_answered == 200.0  # answered: 100, 300, 200
    assert row.p95_latency_answered == pytest.approx(290.0)  # numpy's linear interpolation: 200 + 0.9·100
    assert gate_row("no abstain", {"total_tokens": np.ones(2)}) is None


def test_every_run_report_and_summary_has_the_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert (
        main(
            [
                "run",
                "--demo",
                "--embedder",
                "hashing",
                "--out",
                str(tmp_path / "run"),
                "--grounded",
                "overlap:0.5",
                "--correct",
                "token_f1:0.5",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Paired analysis: grounded = overlap≥0.5, correct = token_f1≥0.5" in out
    saved = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))["paired_analysis"]
    assert saved["grounded"] == "overlap≥0.5" and sum(c["count"] for c in saved["cells"]) == saved["n"]
    assert saved["n"] + saved["n_abstained"] + saved["n_left_out"] == 45
    assert (
        main(
            [
                "run",
                "--demo",
                "--embedder",
                "hashing",
                "--out",
                str(tmp_path / "other"),
                "--metrics",
                "token_f1",
                "--grounded",
                "overlap:0.5",
            ]
        )
        == 2
    )
    assert "--grounded reads overlap, which this run does not compute" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()  # refused before anything was scored


def test_the_markdown_report_has_the_same_tables(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert (
        main(
            [
                "run",
                "--demo",
                "--embedder",
                "hashing",
                "--out",
                str(tmp_path / "run"),
                "--format",
                "markdown",
                "--n-resamples",
                "200",
            ]
        )
        == 0
    )
    markdown = capsys.readouterr().out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    overlap = next(s for s in summary["summaries"] if s["metric"] == "overlap")
    assert (
        f"| Overlap | {overlap['value']:.3f} | [{overlap['ci_low']:.3f}, {overlap['ci_high']:.3f}] | 45 | 0 |"
        in markdown
    )
    assert "| grounded | " in markdown and markdown.index("## Primary") < markdown.index("## Appendix")
    assert f"- `{summary['paired_analysis']['signature']}`" in markdown


def test_the_default_grounded_split_puts_demo_answers_on_both_sides(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Every answer's fallback is at least 0.6 (seed 000), so the old default, ≥ 0.5, called every answer grounded.
    The default now reads the fallback at 0.8, which for an answer is Overlap ≥ 0.5: counted here from Overlap."""
    assert main(["run", "--demo", "--out", str(tmp_path / "run"), "--no-progress", "--n-resamples", "200"]) == 0
    out = capsys.readouterr().out
    items = [
        json.loads(line)["scores"]
        for line in (tmp_path / "run" / "items.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    answered = [s for s in items if s["abstained"] == 0 and s["token_f1"] is not None]
    half_supported = sum(s["overlap"] >= 0.5 for s in answered)
    saved = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))["paired_analysis"]
    grounded = sum(c["count"] for c in saved["cells"] if c["grounded"])
    assert saved["grounded"] == "faithfulness_fallback≥0.8" and saved["n"] == len(answered)
    assert grounded == half_supported and 0 < grounded < saved["n"]
    assert "Paired analysis: grounded = faithfulness_fallback≥0.8" in out
