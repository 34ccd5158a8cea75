"""malformed_citations: markers that look like ``[CIT:doc_id]`` but that find_citations does not count.

Each expected list is read off the test's own text by hand.
"""

from __future__ import annotations

import pytest

from ragmeter.text.citations import find_citations, malformed_citations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Open at 9 [cit:lib].", ["[cit:lib]"]),  # wrong case
        ("Open at 9 [Cit:lib].", ["[Cit:lib]"]),
        ("Open at 9 [CIT:lib.", ["[CIT:lib."]),  # never closed, to the end of the text
        ("Open at 9 [CIT:[CIT:lib]].", ["[CIT:[CIT:lib]]"]),  # nested, listed whole
        ("Open at 9 [CIT:].", ["[CIT:]"]),  # empty doc_id
        ("Open at 9 [CIT:   ].", ["[CIT:   ]"]),  # only spaces
        ("Open at 9 [CIT lib].", ["[CIT lib]"]),  # no colon
        ("Open at 9 [CIT_lib].", ["[CIT_lib]"]),
        ("Open at 9 [ CIT:lib].", ["[ CIT:lib]"]),  # a space before CIT
        ("Open at 9 [CIT;lib].", ["[CIT;lib]"]),
    ],
    ids=[
        "lower",
        "title-case",
        "unclosed",
        "nested",
        "empty",
        "blank",
        "no-colon",
        "underscore",
        "space-first",
        "semicolon",
    ],
)
def test_each_malformed_form_is_listed(text: str, expected: list[str]) -> None:
    assert malformed_citations(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "No citation at all.",
        "Open at 9 [CIT:lib].",
        "Open at 9 [CIT: lib ].",  # spaces around the doc_id are allowed
        "Open at 9 [CIT:doc 2][CIT:d-3_x.y/z#4].",
        "Jam buka [CIT:perpustakaan-é].",
        "A [CIT:a]. B [CIT:a]. C [CIT:b]",  # repeats
        "[citation needed] and [Citations] are prose, not markers.",
        "A list [1] and a link [here](http://x) stay out of it.",
        "Doubled outer brackets [[CIT:lib]] hold one good marker.",
    ],
)
def test_well_formed_markers_and_prose_are_never_listed(text: str) -> None:
    assert malformed_citations(text) == []


def test_every_well_formed_marker_is_one_find_citations_counts() -> None:
    text = "A [CIT:a]. B [CIT: b c ]. C [CIT:d-1]."
    assert find_citations(text) == ["a", "b c", "d-1"]
    assert malformed_citations(text) == []


def test_malformed_markers_come_in_order_with_repeats() -> None:
    text = "A [cit:x]. B [CIT:ok]. C [CIT x]. D [cit:x]. E [CIT:]"
    assert malformed_citations(text) == ["[cit:x]", "[CIT x]", "[cit:x]", "[CIT:]"]


def test_an_unclosed_marker_stops_at_the_next_bracket_or_line_end() -> None:
    # the well-formed marker after the unclosed one is not listed, and not swallowed
    assert malformed_citations("See [CIT:lib and [CIT:d2].") == ["[CIT:lib and"]
    assert malformed_citations("See [CIT:lib\nNext paragraph [CIT:d2].") == ["[CIT:lib"]


def test_a_nested_marker_is_listed_once_not_again_for_its_inner_marker() -> None:
    assert malformed_citations("X [CIT:[CIT:a]] Y [CIT:[cit:b]]") == ["[CIT:[CIT:a]]", "[CIT:[cit:b]]"]


def test_the_issue_examples_all_flagged() -> None:
    text = "Hours [cit:lib]. Fees [CIT:lib. Rules [CIT:[CIT:lib]]"
    assert malformed_citations(text) == ["[cit:lib]", "[CIT:lib. Rules", "[CIT:[CIT:lib]]"]


def test_many_unclosed_markers_take_linear_time() -> None:
    text = "[CIT:x " * 50_000  # 50,000 markers never closed: one pass, not 50,000 scans of the text
    found = malformed_citations(text)
    assert len(found) == 50_000 and found[0] == "[CIT:x"
