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

*Language*: the words, stems, function and scope words and the way numbers are written are the record's language's
(:mod:`ragmeter.text.languages`): in Indonesian, Snowball's ``indonesian`` stems (*membayar*, *pembayaran* and
*dibayar* meet at *bayar*), its function words (*yang*, *dari*, *untuk*) and scope words (*semua*, *hanya*,
*setiap*), a dot between thousands and a decimal comma (``1.500`` = 1500, ``2,5`` = 2.5 ≠ 25), a number as one
word with its multiplier (``Rp1,5 juta`` = ``Rp1.500.000``), and ``Rp25.000`` = ``Rp 25.000`` = 25.000 rupiah; a
negation (*tidak*, *bukan*) is a scope word. English is checked as it was chosen above.

*Split only*: a judge asked only to split the text (``claim_split``, the packaged judge's default) gives no
verdicts; :func:`verified_claims` makes every claim, and every sentence its claims leave out, supported exactly
when the chunks support it, naming the fewest chunks its words and numbers come from (for Precision).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import snowballstemmer

from ragmeter.text.citations import CITATION_PATTERN
from ragmeter.text.languages import LANGUAGES, Language
from ragmeter.text.sentences import split_sentences

__all__ = [
    "COVERAGE",
    "Claim",
    "checked_claims",
    "content_words",
    "left_out",
    "numbers_found",
    "scope_kept",
    "supporting_chunks",
    "supports",
    "verified_claims",
    "wordless",
    "words_covered",
]

#: The share of a claim's content words that must occur in the chunks.
COVERAGE = 0.7
#: The check's version, in the signature of every metric that reads it (with the language's version).
VERSION = "evidence-5"
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS_DOT = re.compile(r"^\d{1,3}(?:\.\d{3})+(?:,\d+)?$")
ENGLISH = LANGUAGES["en"]


@dataclass(frozen=True)
class Claim:
    """One claim and the judge's verdict on it; ``chunks`` are 1-based numbers of the chunks used, ``evidence``
    the words the judge quoted from them."""

    text: str
    verdict: str
    chunks: tuple[int, ...] = ()
    evidence: str = ""


def _plain(text: str, language: Language) -> str:
    text = CITATION_PATTERN.sub(" ", text)
    for prefix in language.currency_prefixes:  # "Rp25.000" reads as "Rp 25.000"
        text = re.sub(rf"(?i)\b{re.escape(prefix)}\.?(?=\d)", f"{prefix} ", text)
    return text


def _number(written: str, language: Language) -> str:
    """A number as digits and at most one decimal point: ``1,000`` and (decimal comma) ``1.000`` are 1000,
    ``2,5`` (decimal comma) is 2.5. In a decimal-comma language a dot stays a decimal point unless it groups
    thousands (``1.5`` is 1.5, ``1.500`` is 1500)."""
    if not language.decimal_comma:
        return written.replace(",", "")
    if _THOUSANDS_DOT.match(written):
        written = written.replace(".", "")
    return written.replace(",", ".")


@lru_cache(maxsize=8)
def _number_pattern(language: Language) -> re.Pattern[str]:
    words = "|".join(re.escape(word) for word, _ in language.number_words)
    return re.compile(
        rf"(?P<number>{_NUMBER.pattern})" + (rf"(?:\s*(?P<times>{words})\b)?" if words else ""), re.IGNORECASE
    )


@lru_cache(maxsize=4096)
def _whole_numbers(text: str, language: Language) -> tuple[str, tuple[str, ...]]:
    """``text`` with its numbers taken out, and their values (``1,5 juta`` → ``1500000``); kept for the words and
    the numbers of one text, which both read it."""
    multipliers = dict(language.number_words)
    values: list[str] = []

    def take(match: re.Match[str]) -> str:
        written = _number(match.group("number"), language)
        try:
            value = Decimal(written)
        except InvalidOperation:  # "1.2.3": not one number; kept as written
            values.append(written)
            return " "
        if match.groupdict().get("times"):
            value *= multipliers[match.group("times").lower()]
        values.append(format(value.normalize(), "f"))
        return " "

    rest = _number_pattern(language).sub(take, _plain(text, language))
    return rest, tuple(values)


def _words(text: str, language: Language = ENGLISH) -> list[str]:
    if not language.whole_numbers:
        return _WORD.findall(_plain(text, language).lower())
    rest, values = _whole_numbers(text, language)
    same = dict(language.same_words)
    return [*values, *(same.get(word, word) for word in _WORD.findall(rest.lower()))]


def _numbers(text: str, language: Language = ENGLISH) -> set[str]:
    if language.whole_numbers:
        return set(_whole_numbers(text, language)[1])
    return {_number(number, language) for number in _NUMBER.findall(_plain(text, language))}


@lru_cache(maxsize=8)
def _stemmer(algorithm: str) -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer(algorithm)


@lru_cache(maxsize=65536)
def _stem(word: str, algorithm: str = "english") -> str:
    return str(_stemmer(algorithm).stemWord(word))


def content_words(text: str, language: Language = ENGLISH) -> set[str]:
    """The stems of ``text``'s content words in ``language``: words of three letters or more, its function words
    left out.

    >>> sorted(content_words("A library card costs 25 dollars a year."))
    ['card', 'cost', 'dollar', 'librari', 'year']
    >>> sorted(content_words("Pembayaran dilakukan di loket.", LANGUAGES["id"]))
    ['bayar', 'laku', 'loket']
    """
    return {
        _stem(word, language.stemmer)
        for word in _words(text, language)
        if len(word) > 2 and word not in language.function_words
    }


def wordless(text: str, *, language: Language = ENGLISH) -> bool:
    """``text`` has no content word and no number: nothing this check can look for, so it would pass it against
    any chunks, whatever it says.

    >>> wordless("No."), wordless("```"), wordless("No, it costs 25 dollars.")
    (True, True, False)
    """
    return not content_words(text, language) and not _numbers(text, language)


class _Held:
    """What a record's chunks hold, read once for all the claims checked against them: each chunk's content-word
    stems and numbers, and the words of them all."""

    def __init__(self, chunks: Sequence[str], language: Language = ENGLISH) -> None:
        self.language = language
        self.stems = [content_words(chunk, language) for chunk in chunks]
        self.numbers = [_numbers(chunk, language) for chunk in chunks]
        self.all_stems: set[str] = set().union(*self.stems)
        self.all_numbers: set[str] = set().union(*self.numbers)
        self.words: set[str] = set().union(*(_words(chunk, language) for chunk in chunks))

    def covers(self, claim: str) -> bool:
        wanted = content_words(claim, self.language)
        return not wanted or len(wanted & self.all_stems) >= COVERAGE * len(wanted)

    def has_numbers(self, claim: str) -> bool:
        return _numbers(claim, self.language) <= self.all_numbers

    def keeps_scope(self, claim: str) -> bool:
        return (set(_words(claim, self.language)) & self.language.scope_words) <= self.words

    def supports(self, claim: str) -> bool:
        return self.covers(claim) and self.has_numbers(claim) and self.keeps_scope(claim)

    def sources(self, claim: str) -> tuple[int, ...]:
        held = [stems | numbers for stems, numbers in zip(self.stems, self.numbers, strict=True)]
        missing = (content_words(claim, self.language) | _numbers(claim, self.language)) & (
            self.all_stems | self.all_numbers
        )
        picked = []
        while missing:
            best = max(range(len(held)), key=lambda i: (len(held[i] & missing), -i))
            picked.append(best + 1)
            missing -= held[best]
        return tuple(sorted(picked))


def words_covered(claim: str, chunks: Sequence[str], *, language: Language = ENGLISH) -> bool:
    """At least ``COVERAGE`` of ``claim``'s content words occur in ``chunks`` (a claim with none is covered).

    >>> words_covered("Non-residents pay 25 dollars a year.", ["Non-residents pay 25 dollars per year."])
    True
    >>> words_covered("FICO weighs payment history heavily.", ["Payment history matters most."])
    False
    """
    return _Held(chunks, language).covers(claim)


def numbers_found(claim: str, chunks: Sequence[str], *, language: Language = ENGLISH) -> bool:
    """Every number ``claim`` states occurs in one of ``chunks``.

    >>> numbers_found("Tickets cost 40 dollars", ["Tickets cost 25 dollars."])
    False
    >>> numbers_found("It has 1,000 seats", ["The hall seats 1000 people."])
    True
    >>> numbers_found("Tiketnya Rp 25.000", ["Harga tiket Rp25000."], language=LANGUAGES["id"])
    True
    >>> numbers_found("Jaraknya 2,5 km", ["Jaraknya 25 km."], language=LANGUAGES["id"])
    False
    """
    return _Held(chunks, language).has_numbers(claim)


def scope_kept(claim: str, chunks: Sequence[str], *, language: Language = ENGLISH) -> bool:
    """Every scope word of ``claim`` occurs in one of ``chunks``.

    >>> scope_kept("Everyone pays 25 dollars.", ["Non-residents pay 25 dollars."])
    False
    """
    return _Held(chunks, language).keeps_scope(claim)


def supports(chunks: Sequence[str], claim: str, *, language: Language = ENGLISH) -> bool:
    """``chunks`` hold ``claim``'s content words (``COVERAGE`` of them), every number and every scope word."""
    return _Held(chunks, language).supports(claim)


def left_out(claims: Sequence[str], text: str, *, language: Language = ENGLISH) -> list[str]:
    """The sentences of ``text`` with a content word that is in none of ``claims``.

    >>> left_out(["Tickets cost 25 dollars."], "Tickets cost 25 dollars. Children enter free.")
    ['Children enter free.']
    """
    claimed = set().union(*(content_words(claim, language) for claim in claims))
    return [sentence for sentence in split_sentences(text, language) if content_words(sentence, language) - claimed]


def checked_claims(
    claims: Sequence[Claim], chunks: Sequence[str], text: str, *, language: Language = ENGLISH
) -> tuple[Claim, ...]:
    """``claims`` (the judge's, on ``text``) with every supported claim the ``chunks`` (the texts of the record's
    chunks) do not support made unsupported, naming no chunk; then each sentence of ``text`` the claims leave
    out, as a claim that is supported exactly when the chunks support it."""
    held = _Held(chunks, language)
    out = [
        claim
        if claim.verdict != "supported" or held.supports(claim.text)
        else replace(claim, verdict="unsupported", chunks=())
        for claim in claims
    ]
    out += [
        Claim(sentence, "supported" if held.supports(sentence) else "unsupported")
        for sentence in left_out([claim.text for claim in claims], text, language=language)
    ]
    return tuple(out)


def supporting_chunks(chunks: Sequence[str], claim: str, *, language: Language = ENGLISH) -> tuple[int, ...]:
    """The 1-based numbers of the chunks that together hold every content word and number of ``claim`` any chunk
    holds: the fewest, picked greedily (the chunk holding most of what is still missing, the first on a tie).

    >>> supporting_chunks(["Tickets cost 25 dollars.", "The hall opens at 9.", "Tickets are sold online."],
    ...                   "Tickets cost 25 dollars online.")
    (1, 3)
    """
    return _Held(chunks, language).sources(claim)


def verified_claims(
    claims: Sequence[str], chunks: Sequence[str], text: str, *, language: Language = ENGLISH
) -> tuple[Claim, ...]:
    """A split-only judge's ``claims`` of ``text``, then each sentence of ``text`` they leave out, each supported
    exactly when the ``chunks`` support it, naming the chunks it comes from (:func:`supporting_chunks`).

    >>> [(c.verdict, c.chunks) for c in verified_claims(["Tickets cost 25 dollars."], ["Tickets cost 25 dollars."],
    ...                                                 "Tickets cost 25 dollars. Children enter free.")]
    [('supported', (1,)), ('unsupported', ())]
    """
    held = _Held(chunks, language)
    return tuple(
        Claim(claim, "supported", held.sources(claim)) if held.supports(claim) else Claim(claim, "unsupported")
        for claim in [*claims, *left_out(claims, text, language=language)]
    )
