"""The Indonesian IDK patterns on a held-out set (``id_refusals_fresh.py``; issue 45): everyday refusals and answers
that negate without refusing, written by someone who saw neither the patterns nor the grammar they were changed
on, and measured once after the change. The truth is how each answer was written. The bounds are those figures
(``benchmarks/README.md``, Indonesian): a change of the patterns that misses more, or flags more, fails; none may be
made to fit this set."""

from __future__ import annotations

from id_refusals_fresh import NOT_REFUSALS, REFUSALS

from ragmeter.metrics.citation import abstained
from ragmeter.text import LANGUAGES, IdkDetector

ID = LANGUAGES["id"]


def test_the_sets_are_what_they_say() -> None:
    assert len(set(REFUSALS)) == len(REFUSALS) == 240
    assert len(set(NOT_REFUSALS)) == len(NOT_REFUSALS) == 160


def test_held_out_refusals_are_found_and_answers_that_negate_are_not_flagged() -> None:
    detector = IdkDetector()
    missed = [answer for answer in REFUSALS if not detector.is_idk(answer, ID)]
    flagged = [answer for answer in NOT_REFUSALS if detector.is_idk(answer, ID)]
    assert len(missed) <= 16, missed  # 6.7 %: 1 in 15
    assert len(flagged) <= 3, flagged


def test_a_refusal_followed_by_advice_is_not_an_abstention() -> None:
    # abstaining means every sentence refuses: advice after a refusal ("Silakan cek sumber lain.") is a sentence
    # of its own, so 14 held-out refusals with advice count as answers, besides the 16 the patterns miss
    not_abstaining = [answer for answer in REFUSALS if abstained(answer, language=ID) != 1.0]
    assert len(not_abstaining) <= 30
    assert abstained("Jawabannya tidak ada di dalam konteks. Silakan cek sumber lain.", language=ID) == 0.0
    assert abstained("Jawabannya tidak ada di dalam konteks.", language=ID) == 1.0
