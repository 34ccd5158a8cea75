"""A gate on one run's figures (ragmeter.results.requirements)."""

from __future__ import annotations

import math

import pytest

from ragmeter.core.errors import ConfigError
from ragmeter.core.signature import Signature
from ragmeter.results.aggregate import Summary
from ragmeter.results.requirements import Requirement, check_requirements, parse_requirement


def summary(metric: str, statistic: str, value: float, low: float | None, high: float | None) -> Summary:
    return Summary(
        metric=metric,
        statistic=statistic,
        value=value,
        ci_low=low,
        ci_high=high,
        n=50,
        n_undefined=0,
        undefined_reasons={},
        signature=Signature(metric),
    )


RUN = [
    summary("token_f1", "mean", 0.64, 0.58, 0.70),
    summary("abstained", "rate", 0.1, 0.04, 0.2),
    summary("latency_ms", "p50", 900.0, 800.0, 1000.0),
    summary("latency_ms", "p95", 1900.0, 1500.0, 2300.0),
    summary("idk_citation_count", "sum", 0.0, None, None),
    summary("overlap", "mean", math.nan, math.nan, math.nan),
]


def verdicts(*texts: str, point: bool = False) -> list[bool]:
    return [v.passed for v in check_requirements(RUN, [parse_requirement(t) for t in texts], point=point)]


def test_the_whole_interval_must_meet_a_requirement_unless_the_point_estimate_is_asked_for() -> None:
    # token_f1 0.64 [0.58, 0.70]: >= 0.6 holds for the estimate, not for the interval's low end
    assert verdicts("token_f1>=0.6", "token_f1>=0.55", "token_f1<0.75") == [False, True, True]
    assert verdicts("token_f1>=0.6", point=True) == [True]


def test_quantiles_rates_and_sums() -> None:
    assert verdicts("p95_latency_ms<=2000", "p95_latency_ms<=2500", "p50_latency_ms<1000.5") == [False, True, True]
    assert verdicts("abstained<0.25", "abstained<0.15") == [True, False]
    assert verdicts("idk_citation_count<=0", "idk_citation_count<0") == [True, False]  # a sum: its value


def test_a_missing_or_undefined_figure_fails_with_its_reason() -> None:
    found = check_requirements(
        RUN,
        [parse_requirement("rouge_l>=0.1"), parse_requirement("latency_ms<=2000"), parse_requirement("overlap>=0.5")],
    )
    assert [v.passed for v in found] == [False, False, False]
    assert found[0].reason == "the run has no figure rouge_l"
    assert found[1].reason.endswith("name a quantile, p50_latency_ms or p95_latency_ms")
    assert found[2].reason == "undefined on every item"


def test_requirements_parse_and_bad_ones_say_how_to_write_them() -> None:
    assert parse_requirement(" p95_latency_ms <= 2e3 ") == Requirement("latency_ms", "p95", "<=", 2000.0)
    assert str(parse_requirement("token_f1>=0.6")) == "token_f1>=0.6"
    for bad in ("token_f1=0.6", "token_f1>=", ">=0.6", "token_f1>=0.6.1"):
        with pytest.raises(ConfigError, match="requirement"):
            parse_requirement(bad)
