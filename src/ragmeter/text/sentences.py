"""Sentence splitting that needs no download.

Sentences come from nupunkt's pre-trained Punkt model, which ships inside its wheel. Punkt splits
``… members.[CIT:d1] Next …`` after the period, which would hand the citation to the next sentence; a
citation that opens a sentence is therefore moved back to the sentence before it.
"""

from __future__ import annotations

import re
from importlib.metadata import version

import nupunkt

__all__ = ["SPLITTER_ID", "split_sentences"]

SPLITTER_ID = f"nupunkt-{version('nupunkt')}"
_LEADING_CITATIONS = re.compile(r"^(?:\s*\[CIT:[^\]]*\])+")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, keeping each citation with the sentence it follows.

    Empty and whitespace-only input gives ``[]``.

    >>> split_sentences("Paris is in France.[CIT:d1] It is large [CIT:d2].")
    ['Paris is in France.[CIT:d1]', 'It is large [CIT:d2].']
    """
    sentences: list[str] = []
    for raw in nupunkt.sent_tokenize(text):
        sentence = str(raw).strip()
        leading = _LEADING_CITATIONS.match(sentence)
        if leading and sentences:
            sentences[-1] = f"{sentences[-1]}{leading.group(0).strip()}"
            sentence = sentence[leading.end():].strip()
        if sentence:
            sentences.append(sentence)
    return sentences
