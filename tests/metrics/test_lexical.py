"""EM and token F1 against the SQuAD v1.1 definitions, with values worked out by hand."""

import pytest

from ragmeter import exact_match, token_f1
from ragmeter.core.errors import ConfigError


@pytest.mark.parametrize(
    ("prediction", "references", "expected"),
    [
        ("The Eiffel Tower.", ["eiffel tower"], 1.0),
        ("Eiffel Tower", ["Tour Eiffel", "the  eiffel-tower"], 0.0),  # hyphen removed: "eiffeltower"
        ("an apple", ["Apple!"], 1.0),
        ("Apples", ["apple"], 0.0),
        ("“Paris”", ["Paris"], 0.0),  # curly quotes are not ASCII punctuation
        ("café", ["Café"], 1.0),
        ("", [""], 1.0),  # both empty
        ("", ["something"], 0.0),
        ("The", [""], 1.0),  # "the" normalises to empty
        ("x", ["a", "b", "x"], 1.0),
    ],
)
def test_exact_match(prediction, references, expected):
    assert exact_match(prediction, references) == expected


@pytest.mark.parametrize(
    ("prediction", "references", "expected"),
    [
        # pred [cat, sat, on, mat], ref [cat, sat]: c=2, P=2/4, R=2/2, F1=2·0.5·1/1.5 = 2/3
        ("the cat sat on a mat", ["a cat sat"], 2 / 3),
        # multiset: pred [to, be, to, be], ref [to, be]: c=2, P=1/2, R=1, F1=2/3
        ("to be to be", ["to be"], 2 / 3),
        # pred [new, york, city], refs [york] → P=1/3 R=1 F1=0.5 ; [new, york] → P=2/3 R=1 F1=0.8 → max 0.8
        ("New York City", ["York", "new york"], 0.8),
        ("Paris, France.", ["paris france"], 1.0),
        ("dog", ["cat"], 0.0),
        ("", [""], 1.0),
        ("the an a", ["The"], 1.0),  # both normalise to no tokens
        ("", ["Paris"], 0.0),
        ("Paris", [""], 0.0),
        # pred [u, s, a]? no: "U.S.A." → "usa" (one token); ref "usa" → 1.0
        ("U.S.A.", ["USA"], 1.0),
        # pred [e, =, mc2]: "=" is ASCII punctuation, removed → [e, mc2]; ref [e, mc2] → 1.0
        ("E = mc2", ["e mc2"], 1.0),
    ],
)
def test_token_f1(prediction, references, expected):
    assert token_f1(prediction, references) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("metric", [exact_match, token_f1])
@pytest.mark.parametrize("references", [[], "a string, not a list"])
def test_references_must_be_a_non_empty_list(metric, references):
    with pytest.raises(ConfigError):
        metric("x", references)
