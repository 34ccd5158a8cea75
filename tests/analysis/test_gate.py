"""The CI gate on a comparison (ragmeter.analysis.gate): each mode on comparisons whose answer is known by hand."""

from __future__ import annotations

import argparse
import math

import pytest

from ragmeter.analysis.compare import Comparison, MetricComparison
from ragmeter.analysis.gate import GateRule, apply_gate, detectable_drop, parse_rule, unique_rules
from ragmeter.core.errors import ConfigError


def figure(
    metric: str,
    difference: float,
    low: float,
    high: float,
    p: float,
    *,
    higher: bool | None = True,
    n: int = 100,
    left_out: int = 0,
    ties: int = 0,
) -> MetricComparison:
    return MetricComparison(
        metric, "mean", higher, n, left_out, 0.5, 0.5 + difference, difference, low, high, p, 0, ties, 0
    )


def comparison(*figures: MetricComparison, not_compared: dict[str, str] | None = None) -> Comparison:
    return Comparison("A", "B", 100, (), (), {("all", "all"): figures}, not_compared or {}, {}, "compare|x")


def test_a_significant_drop_fails_and_holm_runs_over_the_gated_metrics_only() -> None:
    gate = apply_gate(
        comparison(
            figure("token_f1", -0.05, -0.08, -0.02, 0.01),
            figure("overlap", -0.03, -0.06, -0.01, 0.04),
            figure("rouge_l", -0.2, -0.3, -0.1, 0.0001),
        ),
        [GateRule("token_f1"), GateRule("overlap")],
    )
    # Holm over the two gated p-values: 0.01·2 = 0.02, then max(0.02, 0.04·1) = 0.04; rouge_l is not gated
    assert [v.p_gate for v in gate.verdicts] == [pytest.approx(0.02), pytest.approx(0.04)]
    assert [v.passed for v in gate.verdicts] == [False, False] and not gate.passed


def test_a_drop_that_is_not_significant_passes_and_says_what_the_data_could_detect() -> None:
    gate = apply_gate(comparison(figure("token_f1", -0.01, -0.05, 0.03, 0.6)), [GateRule("token_f1")])
    (verdict,) = gate.verdicts
    # SE = 0.08 / (2·1.95996) = 0.020409; (1.95996 + 0.841621)·SE = 0.057177
    assert verdict.passed and verdict.detectable == pytest.approx(0.057177, abs=1e-5)
    assert "no significant drop" in verdict.reason and "0.0572" in verdict.reason


def test_a_significant_improvement_passes() -> None:
    (verdict,) = apply_gate(comparison(figure("token_f1", 0.05, 0.02, 0.08, 0.001)), [GateRule("token_f1")]).verdicts
    assert verdict.passed and verdict.reason.startswith("not worse")


@pytest.mark.parametrize(
    "metric",
    [
        "latency_ms",
        "total_tokens",
        "prompt_tokens",
        "completion_tokens",
        "idk_citation_count",
        "malformed_citation_count",
    ],
)
def test_lower_is_better_metrics_fail_when_they_rise_and_pass_when_they_fall(metric: str) -> None:
    rise = figure(metric, 120.0, 50.0, 190.0, 0.001, higher=False)
    fall = figure(metric, -120.0, -190.0, -50.0, 0.001, higher=False)
    assert not apply_gate(comparison(rise), [GateRule(metric)]).passed
    assert apply_gate(comparison(fall), [GateRule(metric)]).passed


def test_non_inferiority_passes_only_when_the_worse_end_is_within_the_margin() -> None:
    close = figure("token_f1", -0.01, -0.019, 0.0, 0.3)
    far = figure("token_f1", -0.01, -0.021, 0.0, 0.3)
    assert apply_gate(comparison(close), [GateRule("token_f1", 0.02)]).passed
    (verdict,) = apply_gate(comparison(far), [GateRule("token_f1", 0.02)]).verdicts
    assert not verdict.passed and "-0.021" in verdict.reason
    slower = figure("latency_ms", 30.0, 10.0, 60.0, 0.01, higher=False)  # worse end: the high one
    assert apply_gate(comparison(slower), [GateRule("latency_ms", 60.0)]).passed
    assert not apply_gate(comparison(slower), [GateRule("latency_ms", 59.0)]).passed


def test_what_was_not_measured_fails_with_its_reason() -> None:
    gate = apply_gate(
        comparison(
            figure("token_f1", 0.0, -0.01, 0.01, 1.0, n=70, left_out=30),
            figure("custom", 0.0, -0.01, 0.01, 1.0, higher=None),
            figure("overlap", math.nan, math.nan, math.nan, math.nan, n=0, left_out=100),
            not_compared={"exact_match": "in run A only"},
        ),
        [GateRule("token_f1"), GateRule("custom"), GateRule("overlap"), GateRule("exact_match"), GateRule("rouge_l")],
        max_undefined=0.2,
    )
    reasons = [v.reason for v in gate.verdicts]
    assert not any(v.passed for v in gate.verdicts)
    assert reasons[0].startswith("undefined on 30 of 100 pairs (30% > 20%)")
    assert "direction is unknown" in reasons[1]
    assert reasons[2] == "no pair has it defined on both sides"
    assert reasons[3] == "not compared: in run A only"
    assert reasons[4] == "in neither run's items"
    assert apply_gate(
        comparison(figure("token_f1", 0.0, -0.01, 0.01, 1.0, n=70, left_out=30)),
        [GateRule("token_f1")],
        max_undefined=0.3,
    ).passed


def test_rules_parse_and_bad_ones_say_how_to_write_them() -> None:
    assert parse_rule("token_f1") == GateRule("token_f1", None)
    assert parse_rule(" overlap : 0.02 ") == GateRule("overlap", 0.02)
    for bad in ("token_f1:-1", "token_f1:x", "a b", "token_f1:inf"):
        with pytest.raises(ConfigError, match=r"gate rule|a margin is"):
            parse_rule(bad)
    with pytest.raises(ConfigError, match="alpha"):
        apply_gate(comparison(figure("token_f1", 0, 0, 0, 1)), [GateRule("token_f1")], alpha=1.5)


def test_the_detectable_drop_shrinks_with_the_interval() -> None:
    wide, narrow = figure("x", 0, -0.1, 0.1, 1), figure("x", 0, -0.01, 0.01, 1)
    assert detectable_drop(narrow, confidence=0.95, alpha=0.05) == pytest.approx(
        detectable_drop(wide, confidence=0.95, alpha=0.05) / 10
    )


def test_bad_rules_are_worded_for_the_command_line_without_the_parsers_name() -> None:
    """argparse prints an ArgumentTypeError's own message (a ValueError would read "invalid parse_rule value")."""
    cases = {
        "x:y": "the margin 'y' is not a number: a gate rule is METRIC or METRIC:MARGIN, e.g. token_f1 or "
        "token_f1:0.02; got 'x:y'",
        "a b": "a gate rule is METRIC or METRIC:MARGIN, e.g. token_f1 or token_f1:0.02; got 'a b'",
        "token_f1:": "a gate rule is METRIC or METRIC:MARGIN, e.g. token_f1 or token_f1:0.02; got 'token_f1:'",
        "token_f1:nan": "the margin is a finite number: a gate rule is METRIC or METRIC:MARGIN, e.g. token_f1 or "
        "token_f1:0.02; got 'token_f1:nan'",
    }
    for text, message in cases.items():
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            parse_rule(text)
        assert isinstance(caught.value, ConfigError) and str(caught.value) == message


def test_a_negative_margin_is_refused_saying_what_a_margin_is() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_rule("token_f1:-0.1")
    assert str(caught.value) == (
        "a margin is how much worse than the baseline the candidate may be, in token_f1's units, so it is at least 0 "
        "(a negative one would demand an improvement, which the gate does not test); got 'token_f1:-0.1'. Write "
        "token_f1:0.1 to allow a drop of 0.1, or token_f1 alone to fail on any significant drop"
    )
    assert parse_rule("token_f1:0") == parse_rule("token_f1:-0") == GateRule("token_f1", 0.0)
    assert str(parse_rule("token_f1:-0")) == "token_f1:0"


def test_a_rule_given_twice_counts_once_in_holm() -> None:
    figures = comparison(figure("token_f1", -0.05, -0.08, -0.02, 0.01), figure("overlap", -0.03, -0.06, -0.01, 0.04))
    gate = apply_gate(
        figures, [GateRule("token_f1"), GateRule("token_f1"), GateRule("overlap"), parse_rule(" overlap ")]
    )
    # Holm over two p-values, not four: 0.01·2 = 0.02, then max(0.02, 0.04·1) = 0.04 (over four: 0.04, 0.12)
    assert [(v.rule.metric, v.p_gate) for v in gate.verdicts] == [
        ("token_f1", pytest.approx(0.02)),
        ("overlap", pytest.approx(0.04)),
    ]
    assert unique_rules([GateRule("a", 0.02), GateRule("b"), parse_rule("a:0.020")]) == (
        GateRule("a", 0.02),
        GateRule("b"),
    )


def test_one_metric_with_two_margins_is_an_error_and_one_of_each_mode_is_not() -> None:
    figures = comparison(figure("token_f1", 0.0, -0.01, 0.01, 1.0))
    with pytest.raises(ConfigError) as caught:
        apply_gate(figures, [parse_rule("token_f1:0.01"), parse_rule("token_f1:0.02")])
    assert str(caught.value) == (
        "token_f1 has two margins, token_f1:0.01 and token_f1:0.02: give one (METRIC:MARGIN passes only when the "
        "candidate is shown at most MARGIN worse; METRIC alone, beside it, fails on a significant drop)"
    )
    both = apply_gate(figures, [parse_rule("token_f1"), parse_rule("token_f1:0.02")])
    assert [v.rule.mode for v in both.verdicts] == ["regression", "non-inferiority"]


def test_when_every_pair_is_tied_no_detectable_drop_is_claimed() -> None:
    """A run against itself: every difference 0, the interval [0, 0]; a standard error of 0 would claim that the
    data detect a drop of 0 with 80 % power."""
    tied = figure("token_f1", 0.0, 0.0, 0.0, 1.0, n=43, ties=43)
    (verdict,) = apply_gate(comparison(tied), [GateRule("token_f1")]).verdicts
    assert verdict.passed and math.isnan(verdict.detectable)
    assert verdict.reason == (
        "not worse (difference +0, Holm-adjusted p = 1); every pair is tied: with no variance, "
        "the drop these runs could detect cannot be estimated"
    )
    assert verdict.to_dict()["detectable_drop"] is None
    shifted = figure("latency_ms", 35.0, 35.0, 35.0, 0.5, higher=False, n=2)  # every pair 35 ms slower
    (verdict,) = apply_gate(comparison(shifted), [GateRule("latency_ms")]).verdicts
    assert verdict.reason == (
        "no significant drop (worse by 35, Holm-adjusted p = 0.5); the pairs' differences do "
        "not vary: with no variance, the drop these runs could detect cannot be estimated"
    )
    assert math.isnan(detectable_drop(tied, confidence=0.95, alpha=0.05))
