"""TREC's nugget recall (TREC 2024 RAG track, AutoNuggetizer): how much of what a good answer must say an answer says.

A question's *nuggets* are the atomic facts of its reference answer, each *vital* (a good answer must state it)
or *okay* (worth stating); each gets one of three grades against an answer: ``support`` (the answer states
it), ``partial`` (states part of it, or hedges it) or ``none``. A nugget's credit is 1 for support, ½ for
partial support, 0 for none; in the *strict* scores partial support earns nothing. The scores are the mean
credit over all nuggets, or over the vital ones only:

- ``nugget_recall`` = (support + ½·partial) / nuggets
- ``nugget_recall_strict`` = support / nuggets
- ``nugget_recall_vital`` = (vital support + ½·vital partial) / vital nuggets
- ``nugget_recall_vital_strict`` = vital support / vital nuggets (the TREC 2024 RAG track's primary score)

A question without nuggets (without vital ones, for the vital scores) has no score: NaN here, where TREC's
``nuggetizer`` scripts write 0.0 (an answer cannot miss a fact that was never asked for).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["GRADES", "nugget_recall", "nugget_recall_strict", "nugget_recall_vital", "nugget_recall_vital_strict"]

#: A nugget's grade against an answer, and its credit in the scores that count partial support.
GRADES = {"support": 1.0, "partial": 0.5, "none": 0.0}


def _mean_credit(grades: Sequence[str], vital: Sequence[bool], *, vital_only: bool, strict: bool) -> float:
    if len(grades) != len(vital):
        raise ValueError(f"{len(grades)} grades for {len(vital)} nuggets: give one grade per nugget")
    unknown = sorted({grade for grade in grades if grade not in GRADES})
    if unknown:
        raise ValueError(f"unknown nugget grades {unknown}: use {', '.join(GRADES)}")
    counted = [grade for grade, is_vital in zip(grades, vital, strict=True) if is_vital or not vital_only]
    if not counted:
        return float("nan")
    credit = [float(grade == "support") if strict else GRADES[grade] for grade in counted]
    return sum(credit) / len(counted)


def nugget_recall(grades: Sequence[str], vital: Sequence[bool]) -> float:
    """(support + ½·partial) / nuggets: every nugget, partial support earning half. NaN without nuggets.

    ``grades[i]`` is nugget i's grade (:data:`GRADES`), ``vital[i]`` whether it is vital.

    >>> nugget_recall(["support", "partial", "none", "none"], [True, True, False, True])
    0.375
    """
    return _mean_credit(grades, vital, vital_only=False, strict=False)


def nugget_recall_strict(grades: Sequence[str], vital: Sequence[bool]) -> float:
    """support / nuggets: every nugget, partial support earning nothing. NaN without nuggets.

    >>> nugget_recall_strict(["support", "partial", "none", "none"], [True, True, False, True])
    0.25
    """
    return _mean_credit(grades, vital, vital_only=False, strict=True)


def nugget_recall_vital(grades: Sequence[str], vital: Sequence[bool]) -> float:
    """(vital support + ½·vital partial) / vital nuggets. NaN without a vital nugget.

    >>> nugget_recall_vital(["support", "partial", "none", "none"], [True, True, False, True])
    0.5
    """
    return _mean_credit(grades, vital, vital_only=True, strict=False)


def nugget_recall_vital_strict(grades: Sequence[str], vital: Sequence[bool]) -> float:
    """vital support / vital nuggets: TREC 2024 RAG's primary score. NaN without a vital nugget.

    >>> round(nugget_recall_vital_strict(["support", "partial", "none", "none"], [True, True, False, True]), 4)
    0.3333
    """
    return _mean_credit(grades, vital, vital_only=True, strict=True)
