"""ROUGE-L against Google's rouge-score, the reference implementation, value for value."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from ragmeter.metrics.rouge import lcs_length, rouge_l, rouge_tokens

SCORER = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def reference(prediction, target):
    return SCORER.score(target, prediction)["rougeL"].fmeasure


@pytest.mark.parametrize(
    ("prediction", "target", "expected"),
    [
        # LCS(the cat sat on the mat / the cat is on the mat) = the cat on the mat = 5; P = R = 5/6
        ("the cat sat on the mat", "the cat is on the mat", 5 / 6),
        # tokens [a, b, c] vs [c, b, a]: LCS 1, P = R = 1/3
        ("a b c", "c b a", 1 / 3),
        ("", "anything", 0.0),
        ("!!!", "?", 0.0),  # no token survives on either side
        # é is not [a-z0-9], so "café" gives the token "caf": [caf, au, lait] vs [cafe, au, lait]: LCS 2, F = 2/3
        ("Café au lait", "cafe au lait", 2 / 3),
    ],
)
def test_hand_worked_values(prediction, target, expected):
    assert rouge_l(prediction, target) == pytest.approx(expected, abs=1e-12)
    assert rouge_l(prediction, target) == pytest.approx(reference(prediction, target), abs=1e-12)


def test_tokens_follow_rouge_score():
    assert rouge_tokens("It's 9:30 — Naïve FAQ_2!") == ["it", "s", "9", "30", "na", "ve", "faq", "2"]


def test_lcs_on_repeated_tokens():
    assert lcs_length(["a", "b", "a", "b"], ["b", "a", "b", "a"]) == 3


WORDS = st.sampled_from(["the", "cat", "sat", "on", "mat", "Mat", "mat.", "it's", "42", "é", "日本", "", "—", "a-b"])
TEXT = st.lists(WORDS, max_size=30).map(" ".join) | st.text(max_size=80)


@settings(max_examples=400, deadline=None)
@given(TEXT, TEXT)
def test_equals_rouge_score_on_random_texts(prediction, target):
    assert rouge_l(prediction, target) == pytest.approx(reference(prediction, target), abs=1e-12)
