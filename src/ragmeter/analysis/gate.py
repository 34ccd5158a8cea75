"""A CI gate on a comparison: may the candidate run ship, metric by metric, with the error rate under control.

A rule names a metric and, optionally, a margin. Each metric's direction comes from the registry (latency,
tokens and counts of faults: lower is better); B is the candidate, A the baseline, ``d`` the mean over paired
items of B − A and ``[lo, hi]`` its paired bootstrap interval over conversations (``compare``'s).

- **Regression** (no margin): the gate fails when the candidate is worse and the change is significant: ``d``
  on the worse side of 0 with a Holm-adjusted p below ``alpha`` (sign-flip permutation test by conversation;
  Holm over the gated metrics only, so the chance that any gated metric fails on noise stays at most
  ``alpha``). Passing says only that no drop was *shown*: with few items a real drop passes. Each verdict
  therefore carries the drop the data could detect (:func:`detectable_drop`).
- **Non-inferiority** (``METRIC:MARGIN``): the gate passes only when the interval's worse end lies within the
  margin: ``lo ≥ −margin`` where higher is better, ``hi ≤ margin`` where lower is. With the 95 % interval this
  is a one-sided test at 2.5 %: it *shows* that the candidate is at most ``margin`` worse. A margin is how much
  worse the candidate may be, so it is at least 0 (a negative one would demand an improvement, which the gate
  does not test). A metric with no known direction cannot be gated.

A rule given twice counts once (in Holm too); a metric may have a regression rule and a non-inferiority rule,
but two margins for one metric are an error.

A metric missing from either run, compared on no pair, or undefined (on either side) on more than
``max_undefined`` of the paired items fails, with the reason: a gate never passes what it did not measure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from ragmeter.analysis.compare import Comparison, MetricComparison
from ragmeter.core.errors import ConfigError
from ragmeter.core.files import json_number
from ragmeter.metrics import get_metric
from ragmeter.results.requirements import RuleError
from ragmeter.stats.paired import holm

__all__ = [
    "POWER",
    "Gate",
    "GateRule",
    "GateVerdict",
    "apply_gate",
    "check_gateable",
    "detectable_drop",
    "parse_rule",
    "unique_rules",
]

#: The power at which :func:`detectable_drop` reports the drop the data could detect.
POWER = 0.8


@dataclass(frozen=True)
class GateRule:
    """Gate ``metric``: against regression (``margin`` ``None``), or non-inferiority within ``margin``."""

    metric: str
    margin: float | None = None

    @property
    def mode(self) -> str:
        return "regression" if self.margin is None else "non-inferiority"

    def __str__(self) -> str:
        return self.metric if self.margin is None else f"{self.metric}:{self.margin:g}"


_FORM = "a gate rule is METRIC or METRIC:MARGIN, e.g. token_f1 or token_f1:0.02"


def parse_rule(text: str) -> GateRule:
    """``"token_f1"`` (regression) or ``"token_f1:0.02"`` (non-inferiority within 0.02); anything else, a
    negative margin included, is a :class:`~ragmeter.results.requirements.RuleError` saying what to write."""
    match = re.fullmatch(r"\s*([^:\s]+)\s*(?::\s*(\S+)\s*)?", text)
    if match is None:
        raise RuleError(f"{_FORM}; got {text!r}")
    metric, given = match.groups()
    if given is None:
        return GateRule(metric)
    try:
        margin = float(given)
    except ValueError:
        raise RuleError(f"the margin {given!r} is not a number: {_FORM}; got {text!r}") from None
    if not math.isfinite(margin):
        raise RuleError(f"the margin is a finite number: {_FORM}; got {text!r}")
    if margin < 0:
        raise RuleError(
            f"a margin is how much worse than the baseline the candidate may be, in {metric}'s units, "
            f"so it is at least 0 (a negative one would demand an improvement, which the gate does not "
            f"test); got {text!r}. Write {metric}:{-margin:g} to allow a drop of {-margin:g}, or "
            f"{metric} alone to fail on any significant drop"
        )
    return GateRule(metric, margin + 0.0)  # so that -0 reads 0


def check_gateable(rule: GateRule) -> None:
    """Before any work: ``rule``'s metric is a registered metric whose direction is known, since any other name
    can never be gated (a typo, a run figure such as ``p95_latency_ms``, a column of one's own) and would only
    read as a failed gate; a registered metric that a run lacks still fails the gate, with the reason."""
    quantile = re.fullmatch(r"p(?:50|95)_(.+)", rule.metric)
    if quantile:
        raise ConfigError(
            f"--fail-on {rule}: a comparison is of per-item values, not of a run's quantiles: gate "
            f"{quantile.group(1)} (its per-item mean difference)"
        )
    try:
        metric = get_metric(rule.metric)
    except ConfigError:
        raise ConfigError(f"--fail-on {rule}: no metric is named {rule.metric} (see 'ragmeter metrics')") from None
    if metric.higher_is_better is None:
        raise ConfigError(
            f"--fail-on {rule}: {rule.metric} has no direction (neither higher nor lower is better), "
            "so a gate cannot tell a candidate worse"
        )


def unique_rules(rules: Sequence[GateRule]) -> tuple[GateRule, ...]:
    """``rules`` with each one given more than once kept once, in the order first given (a metric counts once in
    Holm's correction). A metric may have one rule of each mode, a regression and a non-inferiority; two margins
    for one metric are a :class:`ConfigError` (the smaller one decides alone)."""
    kept: dict[tuple[str, str], GateRule] = {}
    for rule in rules:
        first = kept.setdefault((rule.metric, rule.mode), rule)
        if first != rule:
            raise ConfigError(
                f"{rule.metric} has two margins, {first} and {rule}: give one (METRIC:MARGIN passes "
                "only when the candidate is shown at most MARGIN worse; METRIC alone, beside it, "
                "fails on a significant drop)"
            )
    return tuple(kept.values())


@dataclass(frozen=True)
class GateVerdict:
    """One rule's outcome: ``passed``, and ``reason`` in words. ``comparison`` is the metric's figures (``None``
    when it was not compared); ``p_gate`` its p-value after Holm over the gated metrics; ``detectable`` the
    drop the data could detect with 80 % power (NaN where it cannot be estimated)."""

    rule: GateRule
    passed: bool
    reason: str
    comparison: MetricComparison | None = None
    p_gate: float = math.nan
    detectable: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        m = self.comparison
        return {
            "metric": self.rule.metric,
            "mode": self.rule.mode,
            "margin": self.rule.margin,
            "passed": self.passed,
            "reason": self.reason,
            "difference": json_number(m.difference) if m else None,
            "ci_low": json_number(m.ci_low) if m else None,
            "ci_high": json_number(m.ci_high) if m else None,
            "p_gate": json_number(self.p_gate),
            "n": m.n if m else 0,
            "n_left_out": m.n_left_out if m else 0,
            "detectable_drop": json_number(self.detectable),
        }


@dataclass(frozen=True)
class Gate:
    """The gate on one comparison: every rule's verdict; ``passed`` when all passed."""

    baseline: str
    candidate: str
    verdicts: tuple[GateVerdict, ...]
    alpha: float
    max_undefined: float

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "passed": self.passed,
            "alpha": self.alpha,
            "max_undefined": self.max_undefined,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


def detectable_drop(comparison: MetricComparison, *, confidence: float, alpha: float, power: float = POWER) -> float:
    """The smallest true drop a two-sided test at ``alpha`` would find with probability ``power``:
    ``(z(1 − alpha/2) + z(power)) · SE``, with the standard error read off the bootstrap interval,
    ``SE = (hi − lo) / (2·z(1 − (1 − confidence)/2))`` (a normal approximation). NaN without an interval, and
    for an interval of width 0: the pairs' differences do not vary (every pair tied, say), so there is no
    spread to estimate a standard error from."""
    width = comparison.ci_high - comparison.ci_low
    if not width > 0:
        return math.nan
    z = NormalDist().inv_cdf
    se = width / (2 * z(1 - (1 - confidence) / 2))
    return (z(1 - alpha / 2) + z(power)) * se


def _detectable_words(m: MetricComparison, drop: float) -> str:
    """What the data could detect, in words; why it cannot be said where ``drop`` is NaN."""
    if not math.isnan(drop):
        return f"the data could detect a drop of {drop:.3g} with {POWER:.0%} power"
    if m.ties == m.n:
        return "every pair is tied: with no variance, the drop these runs could detect cannot be estimated"
    if m.ci_high == m.ci_low:
        return (
            "the pairs' differences do not vary: with no variance, the drop these runs could detect cannot be estimated"
        )
    return "with no interval, the drop these runs could detect cannot be estimated"


def _worse(m: MetricComparison) -> float:
    """The difference signed so that positive is worse for the candidate."""
    return -m.difference if m.higher_is_better else m.difference


def apply_gate(
    comparison: Comparison, rules: Sequence[GateRule], *, alpha: float = 0.05, max_undefined: float = 0.2
) -> Gate:
    """Each rule's verdict on ``comparison`` (see the module docstring)."""
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha {alpha:g}: a significance level lies in (0, 1), e.g. 0.05")
    if not 0 <= max_undefined <= 1:
        raise ConfigError(f"max_undefined {max_undefined:g}: a share lies in [0, 1]")
    if not rules:
        raise ConfigError("a gate needs at least one rule (a metric, or a metric and a margin)")
    rules = unique_rules(rules)
    figures = {m.metric: m for m in comparison.overall}
    checked: dict[int, MetricComparison] = {}
    verdicts: dict[int, GateVerdict] = {}
    for k, rule in enumerate(rules):
        problem = _unmeasured(rule, figures.get(rule.metric), comparison, max_undefined)
        if problem is not None:
            verdicts[k] = GateVerdict(rule, False, problem, figures.get(rule.metric))
        else:
            checked[k] = figures[rule.metric]
    regression = [k for k in checked if rules[k].margin is None]
    adjusted = dict(zip(regression, holm([checked[k].p_value for k in regression]), strict=True))
    for k, m in checked.items():
        rule = rules[k]
        drop = detectable_drop(m, confidence=comparison.confidence, alpha=alpha)
        worse_by = _worse(m)
        if rule.margin is None:
            p = adjusted[k]
            failed = worse_by > 0 and p < alpha
            if failed:
                reason = f"worse by {abs(m.difference):.4g}, Holm-adjusted p = {p:.3g} < {alpha:g}"
            elif worse_by > 0:
                reason = (
                    f"no significant drop (worse by {abs(m.difference):.4g}, Holm-adjusted p = {p:.3g}); "
                    f"{_detectable_words(m, drop)}"
                )
            else:
                reason = (
                    f"not worse (difference {m.difference:+.4g}, Holm-adjusted p = {p:.3g}); "
                    f"{_detectable_words(m, drop)}"
                )
            verdicts[k] = GateVerdict(rule, not failed, reason, m, p, drop)
        else:
            worst = -m.ci_low if m.higher_is_better else m.ci_high
            passed = worst <= rule.margin
            bound = f"{m.ci_low:+.4g}" if m.higher_is_better else f"{m.ci_high:+.4g}"
            reason = (
                f"at most {rule.margin:g} worse: the interval's worse end is {bound}"
                if passed
                else f"not shown to be at most {rule.margin:g} worse: the interval's worse end is {bound} "
                f"(difference {m.difference:+.4g})"
            )
            verdicts[k] = GateVerdict(rule, passed, reason, m, math.nan, drop)
    return Gate(
        comparison.baseline, comparison.candidate, tuple(verdicts[k] for k in range(len(rules))), alpha, max_undefined
    )


def _unmeasured(rule: GateRule, m: MetricComparison | None, comparison: Comparison, max_undefined: float) -> str | None:
    """Why ``rule`` cannot be judged on this comparison, or ``None``."""
    if m is None:
        why = comparison.not_compared.get(rule.metric)
        if why:
            return f"not compared: {why}"
        quantile = re.fullmatch(r"p(?:50|95)_(.+)", rule.metric)
        if quantile:
            return (
                f"in neither run's items: a comparison is of per-item values; gate {quantile.group(1)} (its "
                "per-item mean difference)"
            )
        return "in neither run's items"
    if m.higher_is_better is None:
        return "its direction is unknown (not a registered metric): a gate cannot tell better from worse"
    if m.n == 0:
        return "no pair has it defined on both sides"
    share = m.n_left_out / (m.n + m.n_left_out)
    if share > max_undefined:
        return (
            f"undefined on {m.n_left_out} of {m.n + m.n_left_out} pairs ({share:.0%} > {max_undefined:.0%}): "
            "the gate would judge a part of the items only"
        )
    return None
