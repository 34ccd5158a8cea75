"""A gate's verdicts as text: a table for the terminal or markdown (a CI job's summary, the verdict first), and as
JUnit test suites."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragmeter.analysis.gate import Gate
from ragmeter.report.junit import JunitCase, JunitSuite
from ragmeter.report.terminal import visible
from ragmeter.results.requirements import RequirementVerdict

__all__ = ["gate_suite", "render_gate", "render_requirements", "requirements_suite"]


def _number(value: float | None, digits: str = ".4g", sign: str = "") -> str:
    return "–" if value is None or math.isnan(value) else f"{value:{sign}{digits}}"


def _verdict(passed: bool, markdown: bool) -> str:
    if markdown:
        return "✅ pass" if passed else "❌ FAIL"
    return "pass" if passed else "FAIL"


def render_gate(gate: Gate, *, markdown: bool = False) -> str:
    """The verdict, then one row per rule: mode, difference and interval, p after Holm, the verdict's reason."""
    title = f"Gate: {visible(gate.candidate)} against {visible(gate.baseline)}: {_verdict(gate.passed, markdown)}"
    header = ("metric", "mode", "B − A", "interval", "p (Holm)", "verdict", "why")
    rows = []
    for v in gate.verdicts:
        m = v.comparison
        mode = v.rule.mode + (f" ({v.rule.margin:g})" if v.rule.margin is not None else "")
        interval = f"[{_number(m.ci_low, sign='+')}, {_number(m.ci_high, sign='+')}]" if m else "–"
        rows.append(
            (
                visible(v.rule.metric),
                mode,
                _number(m.difference, sign="+") if m else "–",
                interval,
                _number(v.p_gate, ".3g"),
                _verdict(v.passed, markdown),
                v.reason,
            )
        )
    return _table(title, header, rows, markdown)


def render_requirements(verdicts: Sequence[RequirementVerdict], *, point: bool, markdown: bool = False) -> str:
    """The verdict, then one row per requirement: the estimate, its interval, the verdict's reason."""
    passed = all(v.passed for v in verdicts)
    basis = "the point estimate" if point else "the whole interval"
    title = f"Requirements ({basis} must meet each): {_verdict(passed, markdown)}"
    header = ("requirement", "value", "interval", "verdict", "why")
    rows = []
    for v in verdicts:
        s = v.summary
        interval = (
            f"[{_number(s.ci_low)}, {_number(s.ci_high)}]"
            if s is not None and s.ci_low is not None and s.ci_high is not None
            else "–"
        )
        rows.append(
            (
                visible(str(v.requirement)),
                _number(s.value) if s else "–",
                interval,
                _verdict(v.passed, markdown),
                v.reason,
            )
        )
    return _table(title, header, rows, markdown)


def _table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]], markdown: bool) -> str:
    if markdown:
        lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header) - 1)]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + "  " + header[-1]]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows]
    return "\n".join(lines)


def gate_suite(gate: Gate) -> JunitSuite:
    """One JUnit test case per rule of the gate."""
    cases = []
    for v in gate.verdicts:
        name = f"{v.rule.metric} ({v.rule.mode}" + (f" {v.rule.margin:g})" if v.rule.margin is not None else ")")
        cases.append(JunitCase(name, None if v.passed else v.reason, v.reason))
    return JunitSuite(f"{gate.candidate} against {gate.baseline}", cases)


def requirements_suite(verdicts: Sequence[RequirementVerdict], name: str) -> JunitSuite:
    """One JUnit test case per requirement of a run."""
    return JunitSuite(name, [JunitCase(str(v.requirement), None if v.passed else v.reason, v.reason) for v in verdicts])
