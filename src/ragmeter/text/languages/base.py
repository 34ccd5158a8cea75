"""What the text tools need to know about one language: a :class:`Language` holds it, as data."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Language"]


@dataclass(frozen=True)
class Language:
    """The words and patterns of one language that ragmeter's text tools read.

    - ``code``: the ISO 639-1 code (``en``, ``id``), the value of ``--language`` and of a record's ``language``;
      ``version`` changes whenever any list below changes, and goes into the signatures of the metrics that
      read them.
    - ``idk_patterns``: regular expressions (case-insensitive) that find a sentence saying the system does not
      know (:mod:`ragmeter.text.idk`): anchored to the speaker or to the source, since they decide alone.
    - ``refusal_cues``: one regular expression for words that decline, which an IDK judge's *declines* verdict
      needs to stand (:mod:`ragmeter.judges.checks.refusal_cues`): broader, since the judge decided already.
    - ``abbreviations``: abbreviations (without their period) the sentence splitter must not end a sentence at,
      beyond those its English model knows; those that often end a sentence (dll., etc.) are left out.
    - ``stemmer``: the Snowball algorithm of the evidence check's content words; ``function_words`` are never
      content words; ``scope_words`` (all, only…) must be in the chunks for a claim that says them.
    - ``decimal_comma``: numbers are written ``1.500,5`` (a dot between thousands, a comma before decimals)
      rather than ``1,500.5``; ``currency_prefixes``: symbols written before a number, with or without a
      space (``Rp25.000``), split from it so that both spellings read the same.
    - ``whole_numbers``: the evidence check reads a number as one word, its value (``1.500`` and ``1500`` are
      the same word; with a following ``number_words`` multiplier, ``1,5 juta`` is 1500000), rather than as
      the pieces between its punctuation (English keeps those: its check was chosen with them);
      ``same_words``: words the check reads as another (``rupiah`` as ``rp``).
    - ``claims_note``: what a judge asked for a text's claims is told about its language (the claims must be
      written in it, for the evidence check to find their words in the chunks); empty for English, whose
      requests stay as they were.
    """

    code: str
    name: str
    version: str
    idk_patterns: tuple[str, ...]
    refusal_cues: str
    abbreviations: tuple[str, ...]
    stemmer: str
    function_words: frozenset[str]
    scope_words: frozenset[str]
    decimal_comma: bool
    currency_prefixes: tuple[str, ...] = ()
    whole_numbers: bool = False
    number_words: tuple[tuple[str, int], ...] = ()
    same_words: tuple[tuple[str, str], ...] = ()
    claims_note: str = ""
