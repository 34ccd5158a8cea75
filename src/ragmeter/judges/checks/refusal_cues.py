"""The check on an IDK judge's verdict: a response is taken to decline, fully or partly, only when it has
words that decline.

A small judge calls many real answers refusals: on the 477 records of MT-RAG's human-eval set the packaged
judge said ``declines`` 80 times where MT-RAG's GPT-4o-mini judge did 21 times (among them "No, they are not the
same. A mortgage is a secured debt…"), often giving "declines" as its whole reason. With this check its
agreement with the released verdicts went from 86.0 % (Cohen's κ 0.29) to 94.8 % (κ 0.55)
(``benchmarks/judge/bench_mtrag_judged.py``). A response that declines says so: it does not know, the documents do
not say, the information is not available, it is sorry, or it only thanks and closes the conversation. So a
``declines`` or ``partly`` verdict stands only when the response holds one of those cues (:func:`cues`); without
one it becomes ``answers``. An ``answers`` verdict is never changed: the cue is required, not sufficient ("I
don't know the exact date, but it opened in spring" answers).

The cues are deliberately broader than the IDK detector's patterns (:mod:`ragmeter.text.idk`), which decide
alone and so must be precise; here the judge has decided already and the cue only has to be present. Each
language has its own (:attr:`~ragmeter.text.languages.Language.refusal_cues`): with only English ones, every
Indonesian refusal lost its *declines* verdict ("Saya tidak tahu." has no English cue).
"""

from __future__ import annotations

import re
from functools import lru_cache

from ragmeter.text.languages import LANGUAGES, Language

__all__ = ["VERSION", "cues", "declines_in_words"]

#: The check's version, in the signature of every metric that reads an IDK verdict (with the language's version,
#: whose :attr:`~ragmeter.text.languages.Language.refusal_cues` it reads).
VERSION = "refusal-cues-1"


@lru_cache(maxsize=16)
def cues(language: Language | None = None) -> re.Pattern[str]:
    """The cues of ``language`` as one case-insensitive pattern; of every language when ``None``."""
    chosen = LANGUAGES.values() if language is None else (language,)
    return re.compile("|".join(f"(?:{each.refusal_cues})" for each in chosen), re.IGNORECASE)


def declines_in_words(response: str, language: Language | None = None) -> bool:
    """Whether ``response`` has words that decline, say the information is missing, or close the conversation,
    in ``language`` (any language ragmeter knows when ``None``).

    >>> declines_in_words("The documents do not specify jail sentences, but DCSS can enforce the order.")
    True
    >>> declines_in_words("You are welcome. Is there anything else I can help you with?")
    True
    >>> declines_in_words("No, they are not the same. A mortgage is a secured debt.")
    False
    >>> declines_in_words("I don\u2019t know.")  # a typographic apostrophe
    True
    >>> declines_in_words("Maaf, dokumen tidak menyebutkan jam buka.", LANGUAGES["id"])
    True
    """
    return cues(language).search(response.replace("\u2019", "'")) is not None
