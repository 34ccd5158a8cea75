"""TREC's nugget recall: hand-worked answers, and TREC's own scoring (the ``nuggetizer`` package) on random ones."""

from __future__ import annotations

import math
import random

import pytest
from conftest import reference_module

from ragmeter.metrics.nuggets import (
    GRADES,
    nugget_recall,
    nugget_recall_strict,
    nugget_recall_vital,
    nugget_recall_vital_strict,
)

SCORES = {  # ours → nuggetizer's field
    nugget_recall: "all_score",
    nugget_recall_strict: "strict_all_score",
    nugget_recall_vital: "vital_score",
    nugget_recall_vital_strict: "strict_vital_score",
}
#: Our grade names → nuggetizer's assignment labels.
LABELS = {"support": "support", "partial": "partial_support", "none": "not_support"}


def test_an_answer_worked_by_hand() -> None:
    # nuggets: v v v o o; grades: support, partial, none, support, partial
    grades = ["support", "partial", "none", "support", "partial"]
    vital = [True, True, True, False, False]
    assert nugget_recall(grades, vital) == pytest.approx((1 + 0.5 + 0 + 1 + 0.5) / 5)
    assert nugget_recall_strict(grades, vital) == pytest.approx(2 / 5)
    assert nugget_recall_vital(grades, vital) == pytest.approx(1.5 / 3)
    assert nugget_recall_vital_strict(grades, vital) == pytest.approx(1 / 3)


def test_a_question_without_nuggets_or_without_vital_ones_has_no_score() -> None:
    assert math.isnan(nugget_recall([], []))
    assert math.isnan(nugget_recall_vital_strict(["support"], [False]))
    assert nugget_recall_strict(["support"], [False]) == 1.0


def test_grades_and_nuggets_must_match() -> None:
    with pytest.raises(ValueError, match="2 grades for 1 nuggets"):
        nugget_recall(["support", "none"], [True])
    with pytest.raises(ValueError, match="unknown nugget grades"):
        nugget_recall(["partial_support"], [True])


def test_the_scores_equal_trec_nuggetizer_s() -> None:
    reference = reference_module("nuggetizer==0.0.5", "nuggetizer.core.metrics")
    generator = random.Random(47)
    compared = 0
    for case in range(300):
        n = generator.randint(1, 12)
        grades = [generator.choice(list(GRADES)) for _ in range(n)]
        vital = [generator.random() < 0.5 for _ in range(n)]
        expected = reference.calculate_nugget_scores(
            str(case),
            [
                {"importance": "vital" if v else "okay", "assignment": LABELS[g]}
                for g, v in zip(grades, vital, strict=True)
            ],
        )
        for ours, field in SCORES.items():
            value = ours(grades, vital)
            if math.isnan(value):  # no vital nugget: nuggetizer writes 0.0 where we have no score
                assert not any(vital) and getattr(expected, field) == 0.0
                continue
            assert value == pytest.approx(getattr(expected, field), abs=1e-12)
            compared += 1
    assert compared > 1000
