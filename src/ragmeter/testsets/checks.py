"""The checks a written item passes before any judge call checks it: lexical, free, and each with the reason a
dropped item is counted under in the command's report.

- :func:`quotes_found`: every quote the writer gave as the answer's evidence is words of the chunks it was shown
  (the claim evidence check's coverage and numbers, :mod:`ragmeter.judges.checks.evidence`): an answer resting on
  words the chunks do not have is not grounded in them, whatever the judge said.
- :func:`answer_grades`: which chunks of the whole corpus hold an item's answer, for its ``qrels``: the chunks it
  was written from are not the only ones (overlapping chunks share sentences; documents repeat each other).
- :func:`states_its_answer`: the question holds every content word of its answer (*"Is the library open at
  nine?"* — *"It opens at nine"*), so it can be answered from the question alone; an answer with no content word
  (*yes*, a bare number) is judged by the later calls.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from ragmeter.judges.checks.evidence import content_words
from ragmeter.judges.nugget_prompts import quote_found
from ragmeter.text.languages import LANGUAGES, Language

__all__ = ["QUOTE_NOT_IN_CHUNKS", "STATES_ITS_ANSWER", "answer_grades", "quotes_found", "states_its_answer"]

QUOTE_NOT_IN_CHUNKS = "a quote of the answer's evidence is not words of its chunks"
STATES_ITS_ANSWER = "the question states its own answer"
#: A word of a quote, without the quote marks or punctuation around it.
_WORD = re.compile(r"\w+")


def quotes_found(quotes: Sequence[str], chunks: Sequence[str], *, language: Language = LANGUAGES["en"]) -> bool:
    """Every quote is words of one of ``chunks`` (no quote: ``False``).

    >>> quotes_found(["opens at 9:00"], ["The library opens at 9:00.", "It closes at 18:00."])
    True
    >>> quotes_found(["opens at 8:00"], ["The library opens at 9:00."])
    False
    """
    return bool(quotes) and all(
        any(quote_found(quote, chunk, language=language) for chunk in chunks) for quote in quotes
    )


def states_its_answer(question: str, answer: str, *, language: Language = LANGUAGES["en"]) -> bool:
    """Every content word of ``answer`` is in ``question`` (an answer without one: ``False``).

    >>> states_its_answer("Does the library open at nine?", "The library opens at nine.")
    True
    >>> states_its_answer("When does the library open?", "At nine.")
    False
    """
    wanted = content_words(answer, language)
    return bool(wanted) and wanted <= content_words(question, language)


def answer_grades(
    quotes: Sequence[str],
    chunks: Sequence[str],
    *,
    language: Language = LANGUAGES["en"],
    written_from: Collection[int] = (),
) -> dict[int, int]:
    """The positions of the ``chunks`` that hold an answer's ``quotes`` (:func:`quote_found`), graded: 2 for a chunk
    that holds every quote (the whole answer), 1 for one that holds some. The chunks the answer was written from
    (positions ``written_from``) are always read, so a kept item's own chunks are among its qrels; another chunk is
    read only when it holds the longest word of a quote (its letters and digits, case aside): the check is lexical,
    and most chunks of a corpus share no word with a quote.

    >>> answer_grades(["opens at 9:00", "closes at 18:00"], ["It opens at 9:00 and closes at 18:00.",
    ...               "It opens at 9:00.", "Parking is free."])
    {0: 2, 1: 1}
    >>> answer_grades(["berarti 'kewanitaan' atau"], ['Kata itu berarti "kewanitaan" atau sifat perempuan.'],
    ...               language=LANGUAGES["id"])
    {0: 2}
    """
    held: dict[int, int] = {}
    for quote in quotes:
        key = max(_WORD.findall(quote), key=len, default="").casefold()
        for i, chunk in enumerate(chunks):
            read = i in written_from or (key and key in chunk.casefold())
            if read and quote_found(quote, chunk, language=language):
                held[i] = held.get(i, 0) + 1
    return {i: 2 if count == len(quotes) else 1 for i, count in sorted(held.items())}
