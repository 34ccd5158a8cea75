"""The gate's JUnit XML (ragmeter.report.junit) against the report format CI systems read (junit.xsd here)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema

from ragmeter.report.junit import JunitCase, JunitSuite, render_junit

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit.xsd"))


def test_a_suite_with_a_failure_and_a_pass_is_valid_and_counts_them() -> None:
    text = render_junit(
        [
            JunitSuite(
                "B against A",
                [
                    JunitCase("token_f1 (regression)", "worse by 0.05 <&>"),
                    JunitCase("overlap (non-inferiority 0.02)", None, "within"),
                ],
            )
        ]
    )
    SCHEMA.validate(text)
    root = ET.fromstring(text)
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    (suite,) = root
    failing, passing = suite
    assert failing.find("failure").get("message") == "worse by 0.05 <&>"  # escaped, read back whole
    assert passing.find("failure") is None and passing.find("system-out").text == "within"


def test_several_suites_and_an_empty_one_are_valid() -> None:
    text = render_junit([JunitSuite("one", [JunitCase("a")]), JunitSuite("empty", [])])
    SCHEMA.validate(text)
    assert [s.get("tests") for s in ET.fromstring(text)] == ["1", "0"]


def test_the_schema_refuses_what_ci_systems_cannot_read() -> None:
    assert not SCHEMA.is_valid(
        '<testsuites><testsuite name="s" tests="1"><testcase name="no class"/></testsuite></testsuites>'
    )
    assert not SCHEMA.is_valid('<testsuites><testsuite tests="1"/></testsuites>')
