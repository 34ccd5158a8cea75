"""SQuAD v1.1 answer normalisation and tokenisation.

``normalize_answer`` follows the official SQuAD v1.1 evaluation script: lowercase, drop ASCII
punctuation (Python's ``string.punctuation``), drop the articles *a*, *an*, *the* as whole words, and
collapse whitespace. Non-ASCII punctuation (curly quotes, dashes) is kept, exactly as the script does.

``normalize_answer_extended`` (``--normalize extended``) first writes what SQuAD's normalisation would wrongly
glue or keep apart the same way: a hyphen between two words is a space (Indonesian reduplication, "anak-anak" =
"anak anak", where SQuAD's gives "anakanak"), and a currency symbol written before a number (Indonesian "Rp") is
one word whether a space or a period follows it or not ("Rp25.000" = "Rp 25.000" = "Rp. 25.000").
"""

from __future__ import annotations

import re
import string

from ragmeter.text.languages import LANGUAGES

__all__ = ["EXTENDED_VERSION", "answer_tokens", "normalize_answer", "normalize_answer_extended"]

#: The extended normalisation's version, in the signatures of the metrics that use it.
EXTENDED_VERSION = "squad-v1.1+extended-1"
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_WORD_HYPHEN = re.compile(r"(?<=[^\W_])-(?=[^\W_])")
_CURRENCY = re.compile(
    r"\b(" + "|".join(sorted({p for lang in LANGUAGES.values() for p in lang.currency_prefixes})) + r")\.?\s*(?=\d)",
    re.IGNORECASE,
)


def normalize_answer(text: str) -> str:
    """Normalise an answer as SQuAD v1.1 does.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_answer_extended(text: str) -> str:
    """:func:`normalize_answer` after a hyphen between words became a space and a currency symbol before a
    number a word of its own (see the module docstring).

    >>> normalize_answer_extended("Anak-anak membayar Rp25.000")
    'anak anak membayar rp 25000'
    >>> normalize_answer_extended("anak anak membayar Rp. 25.000")
    'anak anak membayar rp 25000'
    """
    return normalize_answer(_CURRENCY.sub(r"\1 ", _WORD_HYPHEN.sub(" ", text)))


def answer_tokens(text: str, *, extended: bool = False) -> list[str]:
    """Whitespace tokens of the normalised answer (:func:`normalize_answer_extended`'s when ``extended``)."""
    return (normalize_answer_extended(text) if extended else normalize_answer(text)).split()
