"""The evidence check on a judge's claim verdicts: a claim stays *supported* only when what the judge quotes
as its evidence is in a chunk it names, and every number the claim states is in those chunks.

A small judge calls almost every claim supported. Where it is wrong, its own reply usually shows it: the
"evidence" is a sentence of the answer itself, a chunk's title, or words no chunk holds, and the claim's
figures are in no chunk at all. Both are checked here, without another call:

- *evidence found*: at least ``EVIDENCE_MATCH`` of the evidence's words occur, in order, in the text of one
  chunk the claim names (titles excluded: a title is a topic, not a statement);
- *numbers found*: every number of the claim (digits; ``1,000`` = ``1000``) occurs in a named chunk's text;
- *scope kept*: every scope word of the claim (all, every, everyone, always, never, only, none, nobody) occurs in
  a named chunk's text: "everyone pays" is not what "non-residents pay" states.

A supported claim that fails any of them becomes unsupported; contradicted and unsupported claims are kept as the
judge gave them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragmeter.metrics.judged import Claim

__all__ = ["EVIDENCE_MATCH", "checked_claims", "evidence_found", "numbers_found", "scope_kept"]

#: The share of the evidence's words that must occur, in order, in a named chunk.
EVIDENCE_MATCH = 0.8
#: The check's version, in the signature of every metric that reads it.
VERSION = "evidence-2"
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SCOPE = frozenset({"all", "every", "everyone", "everybody", "everything", "always", "never", "only", "none",
                    "nobody"})


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _numbers(text: str) -> set[str]:
    return {number.replace(",", "") for number in _NUMBER.findall(text)}


def evidence_found(evidence: str, chunk: str) -> bool:
    """At least ``EVIDENCE_MATCH`` of ``evidence``'s words occur in ``chunk``, in order (an empty evidence
    is never found).

    >>> evidence_found("The pool opens at 7 a.m.", "Opening hours: the pool opens at 7 a.m. daily.")
    True
    >>> evidence_found("FICO weighs payment history at 35%", "Payment history matters most.")
    False
    """
    wanted = _words(evidence)
    if not wanted:
        return False
    blocks = SequenceMatcher(None, wanted, _words(chunk), autojunk=False).get_matching_blocks()
    return sum(block.size for block in blocks) >= EVIDENCE_MATCH * len(wanted)


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
    """``claims`` with every supported claim whose evidence, numbers or scope words are in none of the chunks
    it names made unsupported (``chunks``: the texts of the record's chunks, in the judge's numbering from 1)."""
    out = []
    for claim in claims:
        named = [chunks[number - 1] for number in claim.chunks if 1 <= number <= len(chunks)]
        if claim.verdict == "supported" and not (any(evidence_found(claim.evidence, text) for text in named)
                                                 and numbers_found(claim.text, named)
                                                 and scope_kept(claim.text, named)):
            claim = replace(claim, verdict="unsupported", chunks=())
        out.append(claim)
    return tuple(out)
