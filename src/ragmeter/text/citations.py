"""The ``[CIT:doc_id]`` citation contract of seeds 000/001.

One pattern finds every citation: ``[CIT:`` then the doc_id (any characters but brackets, surrounding
spaces ignored) then ``]``. A marker with an empty doc_id is not a citation. :func:`malformed_citations`
finds the markers a generator got wrong, which that pattern passes over.
"""

from __future__ import annotations

import re

__all__ = ["CITATION_PATTERN", "find_citations", "malformed_citations", "strip_citations"]

CITATION_PATTERN = re.compile(r"\[CIT:\s*([^\[\]]*?)\s*\]")
_OPENER = re.compile(r"\[\s*cit(?![a-z])", re.IGNORECASE)
_UNCLOSED_END = re.compile(r"[\[\n]")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")


def find_citations(text: str) -> list[str]:
    """The cited doc_ids in order of appearance, repeats kept.

    >>> find_citations("Rain is wet [CIT:d1]. So is snow [CIT: d2 ][CIT:]")
    ['d1', 'd2']
    """
    return [doc_id for doc_id in CITATION_PATTERN.findall(text) if doc_id]


def strip_citations(text: str) -> str:
    """The text with every citation marker removed and the spacing it leaves behind tidied.

    >>> strip_citations("Rain is wet [CIT:d1].")
    'Rain is wet.'
    """
    without = CITATION_PATTERN.sub(" ", text)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(without.split()))


def malformed_citations(text: str) -> list[str]:
    """The malformed citation markers of ``text``, in order of appearance, repeats kept.

    A marker is anything that opens like one: ``[``, optional spaces, then ``cit`` in any case not followed
    by a letter (so ``[citation needed]`` is not a marker). It is well-formed when it reads ``[CIT:``, a
    doc_id, ``]`` with the doc_id non-empty and free of brackets (spaces around it allowed), which is what
    :func:`find_citations` counts; every other marker is malformed and listed:

    - wrong case ``[cit:lib]``, no colon ``[CIT lib]``, empty doc_id ``[CIT:]`` or ``[CIT: ]``;
    - nested ``[CIT:[CIT:lib]]``, listed whole (up to the bracket that closes the outer one);
    - never closed ``[CIT:lib.``, listed up to the next ``[``, the end of its line or of the text
      (trailing spaces cut); the scan goes on from there, so a later well-formed marker is not listed.

    Only the syntax is checked: whether the doc_id names a retrieved chunk is the citation metrics' work.

    >>> malformed_citations("Yes [CIT:d1]. No [cit:d2], [CIT:[CIT:d3]], [CIT d4] and [CIT:d5.")
    ['[cit:d2]', '[CIT:[CIT:d3]]', '[CIT d4]', '[CIT:d5.']
    """
    closing = _closing_brackets(text)
    found = []
    position = 0
    while (opener := _OPENER.search(text, position)) is not None:
        start = opener.start()
        end = closing.get(start)
        if end is None:
            stop = _UNCLOSED_END.search(text, opener.end())
            position = len(text) if stop is None else stop.start()
            found.append(text[start:position].rstrip())
            continue
        marker = text[start : end + 1]
        well_formed = CITATION_PATTERN.fullmatch(marker)
        if well_formed is None or not well_formed.group(1):
            found.append(marker)
        position = end + 1
    return found


def _closing_brackets(text: str) -> dict[int, int]:
    """The index of the ``]`` that closes each ``[`` (by nesting depth); a ``[`` never closed is absent."""
    closing: dict[int, int] = {}
    open_at: list[int] = []
    for index, char in enumerate(text):
        if char == "[":
            open_at.append(index)
        elif char == "]" and open_at:
            closing[open_at.pop()] = index
    return closing
