"""The ``[CIT:doc_id]`` citation contract of seeds 000/001.

One pattern finds every citation: ``[CIT:`` then the doc_id (any characters but ``]``, surrounding
spaces ignored) then ``]``. A marker with an empty doc_id is not a citation.
"""

from __future__ import annotations

import re

__all__ = ["CITATION_PATTERN", "find_citations", "strip_citations"]

CITATION_PATTERN = re.compile(r"\[CIT:\s*([^\]]*?)\s*\]")
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
