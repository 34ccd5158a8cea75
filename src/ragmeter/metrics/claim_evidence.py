"""The evidence check on a judge's claim verdicts: a claim the judge calls *supported* stays supported only when
the record's chunks hold its words, its numbers and its scope.

A small judge calls almost every claim supported (the packaged 1.5B judge: every claim of 137 of 139 real
answers of MT-RAG's dev split). Where it is wrong, the chunks show it: the claim's words, or its figures, are in
no chunk. Three checks, without another call:

- *words covered*: at least ``COVERAGE`` of the claim's content words (lower-cased words of three letters or
  more that are not function words, each reduced to its Snowball English stem, so "costs" meets "cost") occur in
  the chunks' text;
- *numbers found*: every number of the claim (digits; ``1,000`` = ``1000``) occurs in the chunks' text;
- *scope kept*: every scope word of the claim (all, every, everyone, always, never, only, none, nobody) occurs in
  the chunks' text: "everyone pays" is not what "non-residents pay" states.

A supported claim that fails any of them becomes unsupported; contradicted and unsupported claims are kept as
the judge gave them. The chunks are all the record's chunks, not only those the judge names, and the evidence
the judge quotes is not read: on MT-RAG's dev split (139 answers rated by people) the judge's quotes missed the
passage often enough that requiring them (``evidence-2``: 80 % of the quote's words, in order, in a named chunk)
zeroed faithful answers (Spearman with human faithfulness 0.10), while words covered in any chunk reach 0.43;
the 0.7 of ``COVERAGE`` was chosen there, and is the choice of every fold with one conversation held out
(``benchmarks/README.md``, "Evidence check").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

import snowballstemmer

if TYPE_CHECKING:
    from ragmeter.metrics.judged import Claim

__all__ = ["COVERAGE", "checked_claims", "content_words", "numbers_found", "scope_kept", "words_covered"]

#: The share of a claim's content words that must occur in the chunks.
COVERAGE = 0.7
#: The check's version, in the signature of every metric that reads it.
VERSION = "evidence-3"
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SCOPE = frozenset({"all", "every", "everyone", "everybody", "everything", "always", "never", "only", "none",
                    "nobody"})
_FUNCTION_WORDS = frozenset(
    "the and for are was were been its this that these those with from can may will would should could does did "
    "not you your they their them she his her our which who what when where how than then also but there here "
    "has have had into about any some such more most other".split())
_STEMMER = snowballstemmer.stemmer("english")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _numbers(text: str) -> set[str]:
    return {number.replace(",", "") for number in _NUMBER.findall(text)}


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def content_words(text: str) -> set[str]:
    """The stems of ``text``'s content words: words of three letters or more, function words left out.

    >>> sorted(content_words("A library card costs 25 dollars a year."))
    ['card', 'cost', 'dollar', 'librari', 'year']
    """
    return {_stem(word) for word in _words(text) if len(word) > 2 and word not in _FUNCTION_WORDS}


def words_covered(claim: str, chunks: Sequence[str]) -> bool:
    """At least ``COVERAGE`` of ``claim``'s content words occur in ``chunks`` (a claim with none is covered).

    >>> words_covered("Non-residents pay 25 dollars a year.", ["Non-residents pay 25 dollars per year."])
    True
    >>> words_covered("FICO weighs payment history heavily.", ["Payment history matters most."])
    False
    """
    wanted = content_words(claim)
    if not wanted:
        return True
    available = set().union(*(content_words(chunk) for chunk in chunks)) if chunks else set()
    return len(wanted & available) >= COVERAGE * len(wanted)


def numbers_found(claim: str, chunks: Sequence[str]) -> bool:
    """Every number ``claim`` states occurs in one of ``chunks``.

    >>> numbers_found("Tickets cost 40 dollars", ["Tickets cost 25 dollars."])
    False
    >>> numbers_found("It has 1,000 seats", ["The hall seats 1000 people."])
    True
    """
    available = set().union(*(_numbers(chunk) for chunk in chunks)) if chunks else set()
    return _numbers(claim) <= available


def scope_kept(claim: str, chunks: Sequence[str]) -> bool:
    """Every scope word of ``claim`` occurs in one of ``chunks``.

    >>> scope_kept("Everyone pays 25 dollars.", ["Non-residents pay 25 dollars."])
    False
    """
    available = set().union(*(_words(chunk) for chunk in chunks)) if chunks else set()
    return (set(_words(claim)) & _SCOPE) <= available


def checked_claims(claims: Sequence[Claim], chunks: Sequence[str]) -> tuple[Claim, ...]:
    """``claims`` with every supported claim whose words, numbers or scope words the ``chunks`` (the texts of
    the record's chunks) do not hold made unsupported, naming no chunk."""
    out = []
    for claim in claims:
        if claim.verdict == "supported" and not (words_covered(claim.text, chunks)
                                                 and numbers_found(claim.text, chunks)
                                                 and scope_kept(claim.text, chunks)):
            claim = replace(claim, verdict="unsupported", chunks=())
        out.append(claim)
    return tuple(out)
