"""SQuAD v1.1 answer normalisation and tokenisation.

``normalize_answer`` follows the official SQuAD v1.1 evaluation script: lowercase, drop ASCII
punctuation (Python's ``string.punctuation``), drop the articles *a*, *an*, *the* as whole words, and
collapse whitespace. Non-ASCII punctuation (curly quotes, dashes) is kept, exactly as the script does.
"""

from __future__ import annotations

import re
import string

__all__ = ["answer_tokens", "normalize_answer"]

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Normalise an answer as SQuAD v1.1 does.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    """Whitespace tokens of the normalised answer."""
    return normalize_answer(text).split()
