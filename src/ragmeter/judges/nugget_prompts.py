"""The judge prompts of claim-level correctness after TREC's nuggets: a question's nuggets, and an answer graded on
them.

- ``nuggets``: from the question and its reference answers (without one: the chunks people judged relevant,
  :func:`nugget_sources`), the judge writes at most :data:`MAX_NUGGETS` nuggets, each one fact of at most
  :data:`NUGGET_CHARS` characters marked ``vital`` or ``okay``. The request holds the question and the
  sources only, the same for every answer to the question: the verdict cache serves it once per question to
  every run, model and both sides of a ``compare``.
- ``nugget_grades``: an answer against at most :data:`NUGGETS_PER_CALL` numbered nuggets (AutoNuggetizer's
  batch); per nugget, first the answer's words that state it, then ``support``, ``partial`` or ``none``. The
  quote comes before the grade so that a grade rests on words of the answer, and the nuggets are named by
  number so that a reply cannot grade a list by position without saying which nugget it grades. A ``support``
  or ``partial`` grade stands only where its quote is words of the answer (:func:`quote_found`); else it is
  ``none``, and the grade says why.

The judge's ``n_chunks`` of a grades call (:class:`~ragmeter.judges.engine.JudgeCall`) is the number of nuggets
it numbers, which its checker reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.core.records import Nugget, Record
from ragmeter.judges.checks.evidence import numbers_found, words_covered
from ragmeter.judges.prompts import Prompt, VerdictError, instructions, reply_object
from ragmeter.judges.protocol import ChatRequest
from ragmeter.text.languages import LANGUAGES, Language

__all__ = [
    "GRADES",
    "MAX_NUGGETS",
    "NUGGETS",
    "NUGGETS_PER_CALL",
    "NUGGET_CHARS",
    "NUGGET_GRADES",
    "QUOTE_CHARS",
    "QUOTE_NOT_FOUND",
    "grades_requests",
    "grades_schema",
    "nugget_sources",
    "nuggets_request",
    "quote_found",
    "quoted_grades",
]

#: The most nuggets the judge writes for a question (TREC's assessors kept about ten a question).
MAX_NUGGETS = 10
#: The most nuggets one grades call shows (AutoNuggetizer grades ten at a time).
NUGGETS_PER_CALL = 10
#: Characters at most of a nugget (about 15 words, as the instructions ask, at 6 characters a word, and room).
NUGGET_CHARS = 120
#: Characters at most of a grade's quote (about 30 words).
QUOTE_CHARS = 240
#: A nugget's grades, as :mod:`ragmeter.metrics.nuggets` reads them.
GRADES = ("support", "partial", "none")
#: Why a graded nugget counts as not stated: its quote is not words of the answer.
QUOTE_NOT_FOUND = "the quote is not words of the answer"
_IMPORTANCE = ("vital", "okay")

_NUGGETS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["nuggets"],
    "properties": {
        "nuggets": {
            "type": "array",
            "maxItems": MAX_NUGGETS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["fact", "importance"],
                "properties": {
                    "fact": {"type": "string", "maxLength": NUGGET_CHARS},
                    "importance": {"type": "string", "enum": list(_IMPORTANCE)},
                },
            },
        }
    },
}
_GRADES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["grades"],
    "properties": {
        "grades": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["nugget", "quote", "grade"],
                "properties": {
                    "nugget": {"type": "integer"},
                    "quote": {"type": "string", "maxLength": QUOTE_CHARS},
                    "grade": {"type": "string", "enum": list(GRADES)},
                },
            },
        }
    },
}


def _check_nuggets(data: Any, n_chunks: int) -> dict[str, Any]:
    entries = reply_object(data, ("nuggets",))["nuggets"]
    if not isinstance(entries, list):
        raise VerdictError('"nuggets" must be a list')
    if len(entries) > MAX_NUGGETS:
        raise VerdictError(f"{len(entries)} nuggets: write at most {MAX_NUGGETS}, the vital ones first")
    nuggets = []
    for number, entry in enumerate(entries, start=1):
        entry = reply_object(entry, ("fact", "importance"))
        if not isinstance(entry["fact"], str) or not entry["fact"].strip():
            raise VerdictError(f"nugget {number} has no fact")
        if entry["importance"] not in _IMPORTANCE:
            raise VerdictError(f"nugget {number} has the importance {entry['importance']!r}; use vital or okay")
        nuggets.append({"text": entry["fact"].strip(), "vital": entry["importance"] == "vital"})
    return {"nuggets": nuggets}


def _check_grades(data: Any, n_nuggets: int) -> dict[str, Any]:
    entries = reply_object(data, ("grades",))["grades"]
    if not isinstance(entries, list) or len(entries) != n_nuggets:
        raise VerdictError(f'"grades" must grade all {n_nuggets} nuggets, one entry each, in order')
    grades = []
    for number, entry in enumerate(entries, start=1):
        entry = reply_object(entry, ("nugget", "quote", "grade"))
        if entry["nugget"] != number:
            raise VerdictError(
                f"entry {number} grades nugget {entry['nugget']!r}: grade the nuggets 1 to {n_nuggets} in order"
            )
        if not isinstance(entry["quote"], str):
            raise VerdictError(f'nugget {number}: "quote" must be a string')
        if entry["grade"] not in GRADES:
            raise VerdictError(f"nugget {number} has the grade {entry['grade']!r}; use one of {', '.join(GRADES)}")
        grades.append({"quote": entry["quote"].strip(), "grade": entry["grade"]})
    return {"grades": grades}


NUGGETS = Prompt("nuggets", instructions("nuggets"), _NUGGETS_SCHEMA, 640, _check_nuggets)
NUGGET_GRADES = Prompt("nugget_grades", instructions("nugget_grades"), _GRADES_SCHEMA, 1024, _check_grades)


def grades_schema(n_nuggets: int) -> dict[str, Any]:
    """The grades schema for one request of ``n_nuggets`` nuggets: exactly one entry per nugget (``minItems`` and
    ``maxItems``, which llama.cpp's grammar enforces) naming a nugget shown (an ``enum`` of 1 to ``n_nuggets``).
    The packaged judge otherwise stopped early or graded a nugget it was not shown, which a repair did not always
    fix (the checker still asks for the numbers in order, which a schema without tuples cannot say)."""
    grades = _GRADES_SCHEMA["properties"]["grades"]
    item = grades["items"]
    number = {"type": "integer", "enum": list(range(1, n_nuggets + 1))}
    return {
        **_GRADES_SCHEMA,
        "properties": {
            "grades": {
                **grades,
                "minItems": n_nuggets,
                "maxItems": n_nuggets,
                "items": {**item, "properties": {**item["properties"], "nugget": number}},
            }
        },
    }


def nugget_sources(record: Record) -> tuple[str, ...]:
    """What a record's nuggets are written from: its reference answers; without one, the texts of the chunks
    people judged relevant (a chunk label ``topically_relevant`` or ``evidence_sufficient`` of 1, or a qrels
    grade above 0), as TREC writes nuggets from the judged documents; empty when it has neither."""
    if record.references:
        return record.references
    qrels = record.qrels or {}
    return tuple(
        chunk.text
        for chunk in record.contexts
        if chunk.labels.get("topically_relevant") == 1
        or chunk.labels.get("evidence_sufficient") == 1
        or qrels.get(chunk.doc_id, 0) > 0
    )


def nuggets_request(question: str, sources: Sequence[str]) -> ChatRequest:
    """The request for the nuggets of ``question`` from ``sources`` (:func:`nugget_sources`): nothing of an
    answer is in it."""
    if not sources:
        raise ValueError("nuggets are written from a reference or a relevant chunk: give at least one")
    return NUGGETS.request(
        [("question", question), *(("reference", source) for source in sources)],
        "List the nuggets of the REFERENCE that answer the QUESTION. Reply with the JSON object only.",
    )


def grades_requests(record: Record, nuggets: Sequence[Nugget]) -> list[tuple[ChatRequest, int]]:
    """The grades requests of ``record``'s answer against ``nuggets``, :data:`NUGGETS_PER_CALL` at a time, each
    with the number of nuggets it shows."""
    requests = []
    for start in range(0, len(nuggets), NUGGETS_PER_CALL):
        batch = nuggets[start : start + NUGGETS_PER_CALL]
        blocks = [
            ("question", record.question),
            ("answer", record.answer),
            *((f'nugget n="{number}"', nugget.text) for number, nugget in enumerate(batch, start=1)),
        ]
        requests.append(
            (
                NUGGET_GRADES.request(
                    blocks,
                    f"Grade the nuggets 1 to {len(batch)}: for each, the words of "
                    "the ANSWER that state it, then its grade. Reply with the "
                    "JSON object only.",
                    schema=grades_schema(len(batch)),
                ),
                len(batch),
            )
        )
    return requests


def quote_found(quote: str, answer: str, *, language: Language = LANGUAGES["en"]) -> bool:
    """``quote`` is words of ``answer``: the evidence check's words covered and numbers found, with the answer as
    the one chunk (:mod:`ragmeter.judges.checks.evidence`); an empty quote is not.

    >>> quote_found("closes at 18:00 on Fridays", "The Central Library closes at 18:00 on Fridays.")
    True
    >>> quote_found("closes at 20:00", "The Central Library closes at 18:00 on Fridays.")
    False
    """
    return (
        bool(quote.strip())
        and words_covered(quote, [answer], language=language)
        and numbers_found(quote, [answer], language=language)
    )


def quoted_grades(
    graded: Sequence[dict[str, Any]], answer: str, *, language: Language = LANGUAGES["en"]
) -> list[tuple[str, str | None]]:
    """Each nugget's grade, and why it was changed: a ``support`` or ``partial`` grade whose quote is not words
    of ``answer`` (:func:`quote_found`) becomes ``none``, with :data:`QUOTE_NOT_FOUND`.

    >>> quoted_grades([{"quote": "closes at 18:00", "grade": "support"}, {"quote": "opens at 8", "grade": "partial"},
    ...                {"quote": "", "grade": "none"}], "It closes at 18:00.")
    [('support', None), ('none', 'the quote is not words of the answer'), ('none', None)]
    """
    return [
        (grade["grade"], None)
        if grade["grade"] == "none" or quote_found(grade["quote"], answer, language=language)
        else ("none", QUOTE_NOT_FOUND)
        for grade in graded
    ]
