"""Gate verdicts as JUnit XML, the test report Jenkins, GitLab, Azure Pipelines and GitHub's test reporters read:
one ``<testsuite>`` per gate (a comparison of two runs, or one run's requirements), one ``<testcase>`` per rule,
a ``<failure>`` with the reason where it failed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["JunitCase", "JunitSuite", "render_junit"]


@dataclass(frozen=True)
class JunitCase:
    """One rule: ``name``, and ``failure`` (the reason) where it failed; ``details`` go in the body."""

    name: str
    failure: str | None = None
    details: str = ""


@dataclass(frozen=True)
class JunitSuite:
    name: str
    cases: Sequence[JunitCase]


def render_junit(suites: Sequence[JunitSuite], *, classname: str = "ragmeter.gate") -> str:
    """The XML document (UTF-8, with its declaration)."""
    root = ET.Element(
        "testsuites",
        name="ragmeter",
        tests=str(sum(len(s.cases) for s in suites)),
        failures=str(sum(c.failure is not None for s in suites for c in s.cases)),
        errors="0",
    )
    for suite in suites:
        node = ET.SubElement(
            root,
            "testsuite",
            name=suite.name,
            tests=str(len(suite.cases)),
            failures=str(sum(c.failure is not None for c in suite.cases)),
            errors="0",
            skipped="0",
        )
        for case in suite.cases:
            element = ET.SubElement(node, "testcase", classname=classname, name=case.name)
            if case.failure is not None:
                failure = ET.SubElement(element, "failure", message=case.failure, type="GateFailure")
                failure.text = case.details or case.failure
            elif case.details:
                ET.SubElement(element, "system-out").text = case.details
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
