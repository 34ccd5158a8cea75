"""A gate on one run: requirements such as ``token_f1>=0.6`` or ``p95_latency_ms<=2000`` on its figures.

A requirement holds when the figure's whole interval lies on the required side (``token_f1>=0.6``: the
interval's low end is at least 0.6), so that a run passes only when the data show, at the interval's confidence,
that the true value meets it; a point estimate exactly at the threshold would pass half the time on noise.
``point=True`` compares the point estimate instead (for figures with no interval, such as sums, it is the only
choice and is used whatever ``point`` says). A figure that is missing or undefined fails, with the reason.

A requirement names a metric (its one figure: mean, rate or sum) or a quantile of it, ``p50_latency_ms`` /
``p95_latency_ms``.
"""

from __future__ import annotations

import argparse
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.core.errors import ConfigError
from ragmeter.core.files import json_number
from ragmeter.results.aggregate import Summary

__all__ = ["Requirement", "RequirementVerdict", "RuleError", "check_requirements", "parse_requirement"]

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}


class RuleError(ConfigError, argparse.ArgumentTypeError):
    """A requirement or a gate rule (:func:`ragmeter.analysis.gate.parse_rule`) that cannot be read.

    Also argparse's ``ArgumentTypeError``, so that a command line that takes the parser as an option's ``type``
    prints this message after the option's name; a plain ``ValueError`` would print "invalid parse_requirement
    value" instead."""


@dataclass(frozen=True)
class Requirement:
    """``metric`` (``statistic``: ``p50``/``p95`` for a quantile, else ``None``) ``op`` ``value``."""

    metric: str
    statistic: str | None
    op: str
    value: float

    def __str__(self) -> str:
        name = f"{self.statistic}_{self.metric}" if self.statistic else self.metric
        return f"{name}{self.op}{self.value:g}"


def parse_requirement(text: str) -> Requirement:
    """``"token_f1>=0.6"``, ``"p95_latency_ms <= 2000"``; anything else is a :class:`RuleError` saying the form."""
    form = "a requirement is FIGURE>=VALUE (or <=, >, <), e.g. token_f1>=0.6 or p95_latency_ms<=2000"
    match = re.fullmatch(r"\s*([A-Za-z_][\w@.-]*)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*", text)
    if match is None:
        raise RuleError(f"{form}; got {text!r}")
    name, op, number = match.groups()
    try:
        value = float(number)
    except ValueError:
        raise RuleError(f"{number!r} is not a number: {form}; got {text!r}") from None
    quantile = re.fullmatch(r"(p50|p95)_(.+)", name)
    return (
        Requirement(quantile.group(2), quantile.group(1), op, value) if quantile else Requirement(name, None, op, value)
    )


@dataclass(frozen=True)
class RequirementVerdict:
    """One requirement's outcome: ``passed`` and ``reason``; ``summary`` the figure it was checked on."""

    requirement: Requirement
    passed: bool
    reason: str
    summary: Summary | None = None

    def to_dict(self) -> dict[str, Any]:
        s = self.summary
        return {
            "requirement": str(self.requirement),
            "passed": self.passed,
            "reason": self.reason,
            "value": json_number(s.value) if s else None,
            "ci_low": json_number(s.ci_low) if s else None,
            "ci_high": json_number(s.ci_high) if s else None,
        }


def check_requirements(
    summaries: Sequence[Summary], requirements: Sequence[Requirement], *, point: bool = False
) -> list[RequirementVerdict]:
    """Each requirement's verdict on a run's figures (see the module docstring)."""
    return [_check(summaries, requirement, point) for requirement in requirements]


def _check(summaries: Sequence[Summary], req: Requirement, point: bool) -> RequirementVerdict:
    found = [
        s
        for s in summaries
        if s.metric == req.metric
        and (s.statistic == req.statistic if req.statistic else s.statistic not in ("p50", "p95"))
    ]
    if not found:
        quantiles = [s for s in summaries if s.metric == req.metric and s.statistic in ("p50", "p95")]
        hint = f": name a quantile, p50_{req.metric} or p95_{req.metric}" if quantiles and not req.statistic else ""
        return RequirementVerdict(
            req, False, f"the run has no figure {req.statistic or ''}{'_' if req.statistic else ''}{req.metric}{hint}"
        )
    summary = found[0]
    if math.isnan(summary.value):
        return RequirementVerdict(req, False, "undefined on every item", summary)
    holds = _OPERATORS[req.op]
    has_interval = summary.ci_low is not None and summary.ci_high is not None
    if point or not has_interval:
        passed = holds(summary.value, req.value)
        return RequirementVerdict(
            req, passed, f"{'meets' if passed else 'misses'} it: the estimate is {summary.value:.4g}", summary
        )
    if math.isnan(summary.ci_low) or math.isnan(summary.ci_high):
        return RequirementVerdict(req, False, "its interval is undefined (too few items)", summary)
    end = summary.ci_low if req.op in (">=", ">") else summary.ci_high
    passed = holds(end, req.value)
    side = "low" if req.op in (">=", ">") else "high"
    reason = (
        f"meets it: the interval [{summary.ci_low:.4g}, {summary.ci_high:.4g}] lies on its side"
        if passed
        else f"not shown: the interval's {side} end is {end:.4g} (estimate {summary.value:.4g})"
    )
    return RequirementVerdict(req, passed, reason, summary)
