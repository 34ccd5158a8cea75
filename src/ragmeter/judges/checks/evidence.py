"""The evidence check on a judge's claim verdicts: a claim the judge calls *supported* stays supported only when
the record's chunks hold its words, its numbers and its scope, and what the judge's claims leave out of the text
is checked too.

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
the 0.7 of ``COVERAGE`` was chosen there, and is the choice of every fold with one conversation held out.

*Left out* (``evidence-4``): the same judge's claims hold only 61 % of the answer's content words on those rows,
and what it leaves out escapes the check. So every sentence of the text with a content word that is in none of
the judge's claims becomes a claim of its own, supported exactly when it passes the three checks (naming no
chunk). That lifts the Spearman from 0.43 to 0.58; each held-out fold chose "any content word missing" over
shares of 0.5 to 0.9 (``benchmarks/README.md``, "Evidence check").

*Citation markers* (``evidence-5``): a ``[CIT:doc_id]`` marker (seeds 000/001) is no word or number of a claim or
a sentence. Under ``evidence-4`` each cited sentence counted as left out (its claims drop the marker, whose "cit"
and doc id words no claim holds) and often as unsupported (no chunk holds them either): 2 of the demo's first 6
answers lost half their Faithfulness to it. Text without markers (all of MT-RAG's) scores as under ``evidence-4``.

*Split only*: a judge asked only to split the text (``claim_split``, the packaged judge's default) gives no
verdicts; :func:`verified_claims` makes every claim, and every sentence its claims leave out, supported exactly
when the chunks support it, naming the fewest chunks its words and numbers come from (for Precision).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import snowballstemmer

from ragmeter.text.citations import CITATION_PATTERN
from ragmeter.text.sentences import split_sentences

__all__ = ["COVERAGE", "Claim", "checked_claims", "content_words", "left_out", "numbers_found", "scope_kept",
           "supporting_chunks", "supports", "verified_claims", "words_covered"]

#: The share of a claim's content words that must occur in the chunks.
COVERAGE = 0.7
#: The check's version, in the signature of every metric that reads it.
VERSION = "evidence-5"
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SCOPE = frozenset({"all", "every", "everyone", "everybody", "everything", "always", "never", "only", "none",
                    "nobody"})
_FUNCTION_WORDS = frozenset(
    ["the", "and", "for", "are", "was", "were", "been", "its", "this", "that", "these", "those", "with", "from", "can", "may", "will", "would", "should", "could", "does", "did", "not", "you", "your", "they", "their", "them", "she", "his", "her", "our", "which", "who", "what", "when", "where", "how", "than", "then", "also", "but", "there", "here", "has", "have", "had", "into", "about", "any", "some", "such", "more", "most", "other"])
_STEMMER = snowballstemmer.stemmer("english")


@dataclass(frozen=True)
class Claim:
    """One claim and the judge's verdict on it; ``chunks`` are 1-based numbers of the chunks used, ``evidence``
    the words the judge quoted from them."""

    text: str
    verdict: str
    chunks: tuple[int, ...] = ()
    evidence: str = ""


def _words(text: str) -> list[str]:
    return _WORD.findall(CITATION_PATTERN.sub(" ", text).lower())


def _numbers(text: str) -> set[str]:
    return {number.replace(",", "") for number in _NUMBER.findall(CITATION_PATTERN.sub(" ", text))}


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def content_words(text: str) -> set[str]:
    """The stems of ``text``'s content words: words of three letters or more, function words left out.

    >>> sorted(content_words("A library card costs 25 dollars a year."))
    ['card', 'cost', 'dollar', 'librari', 'year']
    """
    return {_stem(word) for word in _words(text) if len(word) > 2 and word not in _FUNCTION_WORDS}


class _Held:
    """What a record's chunks hold, read once for all the claims checked against them: each chunk's content-word
    stems and numbers, and the words of them all."""

    def __init__(self, chunks: Sequence[str]) -> None:
        self.stems = [content_words(chunk) for chunk in chunks]
        self.numbers = [_numbers(chunk) for chunk in chunks]
        self.all_stems: set[str] = set().union(*self.stems)
        self.all_numbers: set[str] = set().union(*self.numbers)
        self.words: set[str] = set().union(*(_words(chunk) for chunk in chunks))

    def covers(self, claim: str) -> bool:
        wanted = content_words(claim)
        return not wanted or len(wanted & self.all_stems) >= COVERAGE * len(wanted)

    def has_numbers(self, claim: str) -> bool:
        return _numbers(claim) <= self.all_numbers

    def keeps_scope(self, claim: str) -> bool:
        return (set(_words(claim)) & _SCOPE) <= self.words

    def supports(self, claim: str) -> bool:
        return self.covers(claim) and self.has_numbers(claim) and self.keeps_scope(claim)

    def sources(self, claim: str) -> tuple[int, ...]:
        held = [stems | numbers for stems, numbers in zip(self.stems, self.numbers, strict=True)]
        missing = (content_words(claim) | _numbers(claim)) & (self.all_stems | self.all_numbers)
        picked = []
        while missing:
            best = max(range(len(held)), key=lambda i: (len(held[i] & missing), -i))
            picked.append(best + 1)
            missing -= held[best]
        return tuple(sorted(picked))


def words_covered(claim: str, chunks: Sequence[str]) -> bool:
    """At least ``COVERAGE`` of ``claim``'s content words occur in ``chunks`` (a claim with none is covered).

    >>> words_covered("Non-residents pay 25 dollars a year.", ["Non-residents pay 25 dollars per year."])
    True
    >>> words_covered("FICO weighs payment history heavily.", ["Payment history matters most."])
    False
    """
    return _Held(chunks).covers(claim)


def numbers_found(claim: str, chunks: Sequence[str]) -> bool:
    """Every number ``claim`` states occurs in one of ``chunks``.

    >>> numbers_found("Tickets cost 40 dollars", ["Tickets cost 25 dollars."])
    False
    >>> numbers_found("It has 1,000 seats", ["The hall seats 1000 people."])
    True
    """
    return _Held(chunks).has_numbers(claim)


def scope_kept(claim: str, chunks: Sequence[str]) -> bool:
    """Every scope word of ``claim`` occurs in one of ``chunks``.

    >>> scope_kept("Everyone pays 25 dollars.", ["Non-residents pay 25 dollars."])
    False
    """
    return _Held(chunks).keeps_scope(claim)


def supports(chunks: Sequence[str], claim: str) -> bool:
    """``chunks`` hold ``claim``'s content words (``COVERAGE`` of them), every number and every scope word."""
    return _Held(chunks).supports(claim)


def left_out(claims: Sequence[str], text: str) -> list[str]:
    """The sentences of ``text`` with a content word that is in none of ``claims``.

    >>> left_out(["Tickets cost 25 dollars."], "Tickets cost 25 dollars. Children enter free.")
    ['Children enter free.']
    """
    claimed = set().union(*(content_words(claim) for claim in claims))
    return [sentence for sentence in split_sentences(text) if content_words(sentence) - claimed]


def checked_claims(claims: Sequence[Claim], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
    """``claims`` (the judge's, on ``text``) with every supported claim the ``chunks`` (the texts of the record's
    chunks) do not support made unsupported, naming no chunk; then each sentence of ``text`` the claims leave
    out, as a claim that is supported exactly when the chunks support it."""
    held = _Held(chunks)
    out = [claim if claim.verdict != "supported" or held.supports(claim.text)
           else replace(claim, verdict="unsupported", chunks=())
           for claim in claims]
    out += [Claim(sentence, "supported" if held.supports(sentence) else "unsupported")
            for sentence in left_out([claim.text for claim in claims], text)]
    return tuple(out)


def supporting_chunks(chunks: Sequence[str], claim: str) -> tuple[int, ...]:
    """The 1-based numbers of the chunks that together hold every content word and number of ``claim`` any chunk
    holds: the fewest, picked greedily (the chunk holding most of what is still missing, the first on a tie).

    >>> supporting_chunks(["Tickets cost 25 dollars.", "The hall opens at 9.", "Tickets are sold online."],
    ...                   "Tickets cost 25 dollars online.")
    (1, 3)
    """
    return _Held(chunks).sources(claim)


def verified_claims(claims: Sequence[str], chunks: Sequence[str], text: str) -> tuple[Claim, ...]:
    """A split-only judge's ``claims`` of ``text``, then each sentence of ``text`` they leave out, each supported
    exactly when the ``chunks`` support it, naming the chunks it comes from (:func:`supporting_chunks`).

    >>> [(c.verdict, c.chunks) for c in verified_claims(["Tickets cost 25 dollars."], ["Tickets cost 25 dollars."],
    ...                                                 "Tickets cost 25 dollars. Children enter free.")]
    [('supported', (1,)), ('unsupported', ())]
    """
    held = _Held(chunks)
    return tuple(Claim(claim, "supported", held.sources(claim)) if held.supports(claim)
                 else Claim(claim, "unsupported") for claim in [*claims, *left_out(claims, text)])
