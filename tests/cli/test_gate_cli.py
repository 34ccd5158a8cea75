"""The CI gate from the command line: ``compare --fail-on`` and ``run --require``, their exit codes and reports."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from ragmeter.cli import main

SCHEMA = xmlschema.XMLSchema(Path(__file__).parents[1] / "report" / "junit.xsd")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The demo (A) and its uncertainty-gate variant (B), which is worse on token F1 (−0.048, p ≈ 0.016)."""
    folder = tmp_path_factory.mktemp("runs")
    for variant, name in (("v1", "a"), ("gate", "b")):
        assert (
            main(
                [
                    "run",
                    "--demo",
                    variant,
                    "--out",
                    str(folder / name),
                    "--no-progress",
                    "--format",
                    "json",
                    "--n-resamples",
                    "500",
                ]
            )
            == 0
        )
    return folder / "a", folder / "b"


def compare(runs: tuple[Path, Path], *extra: str) -> int:
    return main(["compare", str(runs[0]), str(runs[1]), "--n-resamples", "500", *extra])


def test_a_significant_regression_exits_1_and_a_run_against_itself_exits_0(runs, capsys) -> None:
    assert compare(runs, "--fail-on", "token_f1") == 1
    assert "Gate: b against a: FAIL" in capsys.readouterr().out
    assert (
        main(
            [
                "compare",
                str(runs[0]),
                str(runs[0]),
                "--fail-on",
                "token_f1",
                "--fail-on",
                "latency_ms",
                "--n-resamples",
                "500",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "against a: pass\n" in out
    # every pair tied: no "could detect a drop of 0 with 80% power"
    assert out.count("every pair is tied: with no variance, the drop these runs could detect cannot be estimated") == 2
    assert "could detect a drop" not in out


def test_lower_is_better_metrics_that_fell_pass(runs, capsys) -> None:
    # the gate variant answers fewer questions: fewer tokens and less latency, which is better
    assert compare(runs, "--fail-on", "total_tokens", "--fail-on", "latency_ms") == 0
    assert capsys.readouterr().out.count(" pass ") >= 2


def test_non_inferiority_needs_the_interval_within_the_margin(runs) -> None:
    assert compare(runs, "--fail-on", "token_f1:0.2") == 0  # worse end ≈ −0.09: within 0.2
    assert compare(runs, "--fail-on", "token_f1:0.01") == 1  # not within 0.01


def test_a_metric_missing_from_the_runs_fails_the_gate(runs, capsys) -> None:
    assert compare(runs, "--fail-on", "BertscoreP", "--fail-on", "total_tokens") == 1
    assert "in neither run's items" in capsys.readouterr().out


def test_junit_and_the_summary_file(runs, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    junit = tmp_path / "gate.xml"
    assert (
        compare(
            runs,
            "--fail-on",
            "token_f1",
            "--fail-on",
            "overlap:0.5",
            "--junit",
            str(junit),
            "--summary-file",
            str(summary),
        )
        == 1
    )
    SCHEMA.validate(str(junit))
    cases = {case.get("name"): case.find("failure") is not None for case in ET.parse(junit).iter("testcase")}
    assert cases == {"token_f1 (regression)": True, "overlap (non-inferiority 0.5)": False}
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n### Gate: b against a: ❌ FAIL")  # appended, verdict first
    assert compare(runs, "--fail-on", "token_f1", "--summary-file", str(summary)) == 1
    assert summary.read_text(encoding="utf-8").count("### Gate:") == 2


def test_gate_json_carries_the_decision(runs, capsys) -> None:
    assert compare(runs, "--fail-on", "token_f1", "--format", "json") == 1
    (only,) = json.loads(capsys.readouterr().out)
    assert only["decision"]["passed"] is False
    assert only["decision"]["verdicts"][0]["metric"] == "token_f1"


def test_reports_without_a_gate_and_bad_rules_are_usage_errors(runs, capsys, tmp_path: Path) -> None:
    assert compare(runs, "--junit", str(tmp_path / "x.xml")) == 2
    assert "add --fail-on" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        compare(runs, "--fail-on", "token_f1:-3")
    assert stop.value.code == 2
    assert not (tmp_path / "x.xml").exists()


def test_run_requirements_exit_1_when_one_is_not_shown(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    base = ["run", "--demo", "--out", str(out), "--no-progress", "--n-resamples", "500", "--overwrite"]
    # token F1 is 0.41 [0.33, 0.51] on the demo
    assert main([*base, "--require", "token_f1>=0.3", "--require", "p95_latency_ms<=9000"]) == 0
    assert main([*base, "--require", "token_f1>=0.4"]) == 1
    assert "not shown: the interval's low end" in capsys.readouterr().out
    assert main([*base, "--require", "token_f1>=0.4", "--require-point"]) == 0
    junit = tmp_path / "run.xml"
    assert main([*base, "--require", "idk_citation_count<=0", "--junit", str(junit)]) == 1  # the demo has 2
    SCHEMA.validate(str(junit))
    assert main([*base, "--require", "BertscoreP>=0.1"]) == 2  # not a metric of this run
    assert "which this run does not compute" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["compare", "a", "b", "--fail-on", "x:y"],
            (
                "argument --fail-on: the margin 'y' is not a number: a gate rule is METRIC or METRIC:MARGIN, "
                "e.g. token_f1 or token_f1:0.02; got 'x:y'"
            ),
        ),
        (
            ["compare", "a", "b", "--fail-on", "token_f1:-0.1"],
            (
                "argument --fail-on: a margin is how much worse than the baseline the candidate may be, in "
                "token_f1's units, so it is at least 0 (a negative one would demand an improvement, which the gate "
                "does not test); got 'token_f1:-0.1'. Write token_f1:0.1 to allow a drop of 0.1, or token_f1 alone "
                "to fail on any significant drop"
            ),
        ),
        (
            ["run", "--demo", "--require", "x"],
            (
                "argument --require: a requirement is FIGURE>=VALUE (or <=, >, <), e.g. token_f1>=0.6 or "
                "p95_latency_ms<=2000; got 'x'"
            ),
        ),
        (
            ["run", "--demo", "--require", "token_f1>=1e"],
            (
                "argument --require: '1e' is not a number: a requirement is FIGURE>=VALUE (or <=, >, <), e.g. "
                "token_f1>=0.6 or p95_latency_ms<=2000; got 'token_f1>=1e'"
            ),
        ),
    ],
    ids=["not-a-number", "negative-margin", "no-operator", "bad-number"],
)
def test_a_bad_rule_says_the_form_expected_and_not_the_parsers_name(argv: list[str], message: str, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.splitlines()[-1] == f"ragmeter {argv[0]}: error: {message}"
    assert "parse_" not in err


def test_a_metric_gated_twice_counts_once_or_is_refused(runs, capsys) -> None:
    assert compare(runs, "--fail-on", "token_f1", "--fail-on", "token_f1", "--format", "json") == 1
    (only,) = json.loads(capsys.readouterr().out)
    assert [v["metric"] for v in only["decision"]["verdicts"]] == ["token_f1"]
    single = compare(runs, "--fail-on", "token_f1", "--format", "json")
    assert json.loads(capsys.readouterr().out)[0]["decision"] == only["decision"] and single == 1
    assert compare(runs, "--fail-on", "token_f1:0.01", "--fail-on", "token_f1:0.02") == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: token_f1 has two margins, token_f1:0.01 and token_f1:0.02: give one (METRIC:MARGIN passes only when "
        "the candidate is shown at most MARGIN worse; METRIC alone, beside it, fails on a significant drop)"
    )


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("f1", "--fail-on f1: no metric is named f1 (see 'ragmeter metrics')"),
        (
            "p95_latency_ms",
            (
                "--fail-on p95_latency_ms: a comparison is of per-item values, not of a run's quantiles: gate "
                "latency_ms (its per-item mean difference)"
            ),
        ),
        (
            "abstained",
            (
                "--fail-on abstained: abstained has no direction (neither higher nor lower is better), so a gate "
                "cannot tell a candidate worse"
            ),
        ),
    ],
    ids=["typo", "quantile", "no direction"],
)
def test_a_rule_the_gate_could_never_judge_is_a_usage_error_not_a_failed_gate(
    runs, capsys, rule: str, message: str
) -> None:
    assert compare(runs, "--fail-on", "token_f1", "--fail-on", rule) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1] == f"error: {message}" and captured.out == ""
