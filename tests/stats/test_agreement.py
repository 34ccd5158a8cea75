"""Annotator agreement on a 0/1 label (ragmeter.stats.inter_annotator) checked against values worked out by
hand and against reference implementations on random tables: statsmodels' cohens_kappa and
fleiss_kappa, and the krippendorff package's alpha (nominal)."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from ragmeter.stats.inter_annotator import (
    TIE_RULES,
    LabelAgreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    label_agreement,
    majority,
    raw_agreement,
)

TOL = 1e-9

# --------------------------------------------------------------------------------------------------
# Hand-worked values
# --------------------------------------------------------------------------------------------------

# Cohen: 10 units, contingency table (rows: first annotator, columns: second)
#                 second=1  second=0
#   first=1          4         2
#   first=0          1         3
COHEN_FIRST = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
COHEN_SECOND = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]


def test_cohen_kappa_by_hand() -> None:
    # p_o = (4 + 3) / 10 = 0.7; p₁ = 6/10 = 0.6, q₁ = 5/10 = 0.5
    # p_e = 0.6·0.5 + 0.4·0.5 = 0.3 + 0.2 = 0.5
    # κ = (0.7 − 0.5) / (1 − 0.5) = 0.2 / 0.5 = 0.4
    assert cohen_kappa(COHEN_FIRST, COHEN_SECOND) == pytest.approx(0.4, abs=TOL)
    # κ is symmetric in the two annotators.
    assert cohen_kappa(COHEN_SECOND, COHEN_FIRST) == pytest.approx(0.4, abs=TOL)


def test_cohen_kappa_edges() -> None:
    # Perfect agreement with both classes present: p_o = 1, p_e = 0.5·0.5 + 0.5·0.5 = 0.5 → κ = 1.
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0, abs=TOL)
    # Complete disagreement with balanced classes: p_o = 0, p_e = 0.5 → κ = −0.5 / 0.5 = −1.
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0, abs=TOL)
    # One annotator all 1, the other all 0: p_o = 0, p_e = 1·0 + 0·1 = 0 → κ = 0.
    assert cohen_kappa([1, 1, 1], [0, 0, 0]) == pytest.approx(0.0, abs=TOL)
    # Both annotators give only 1 (or only 0): p_e = 1 → NaN; no units → NaN.
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(cohen_kappa([0, 0], [0, 0]))
    assert math.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError):
        cohen_kappa([1, 0], [1])


# Fleiss: 5 units, 3 annotators each; number of 1s per unit k = 3, 0, 2, 1, 3.
FLEISS_UNITS = [[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 1, 0], [1, 1, 1]]


def test_fleiss_kappa_by_hand() -> None:
    # Per unit (k(k−1) + (3−k)(2−k)) / (3·2): k=3 → 6/6 = 1, k=0 → 6/6 = 1, k=2 → 2/6, k=1 → 2/6, k=3 → 1
    # P̄ = (1 + 1 + 1/3 + 1/3 + 1) / 5 = (11/3) / 5 = 11/15
    # p = (3 + 0 + 2 + 1 + 3) / 15 = 9/15 = 0.6; P̄_e = 0.6² + 0.4² = 0.36 + 0.16 = 0.52 = 13/25
    # κ = (11/15 − 13/25) / (1 − 13/25) = (16/75) / (12/25) = 16/36 = 4/9 = 0.444…
    assert fleiss_kappa(FLEISS_UNITS) == pytest.approx(4 / 9, abs=TOL)


def test_fleiss_kappa_edges() -> None:
    # Every rating 1 (or 0): P̄_e = 1 → NaN; no units → NaN.
    assert math.isnan(fleiss_kappa([[1, 1, 1], [1, 1, 1]]))
    assert math.isnan(fleiss_kappa([[0, 0], [0, 0], [0, 0]]))
    assert math.isnan(fleiss_kappa([]))
    # Two annotators per unit: P̄ = share of units agreed on = 1/2 ([1,1] agrees, [1,0] not);
    # p = 3/4, P̄_e = 9/16 + 1/16 = 10/16 → κ = (8/16 − 10/16) / (6/16) = −2/6 = −1/3.
    assert fleiss_kappa([[1, 1], [1, 0]]) == pytest.approx(-1 / 3, abs=TOL)
    with pytest.raises(ValueError):
        fleiss_kappa([[1, 1, 0], [1, 0]])  # ragged
    with pytest.raises(ValueError):
        fleiss_kappa([[1], [0]])  # one annotator


# Krippendorff with missing ratings: the unit [1] has one rating and is not pairable.
KRIPP_UNITS = [[1, 1], [0, 0, 1], [1], [0, 1], [0, 0, 0]]


def test_krippendorff_alpha_with_missing_ratings_by_hand() -> None:
    # Pairable units: [1,1], [0,0,1], [0,1], [0,0,0] → n = 2 + 3 + 2 + 3 = 10; n₁ = 2+1+1+0 = 4, n₀ = 6
    # D_e = 2·n₀·n₁ / (n(n−1)) = 2·6·4 / 90 = 48/90 = 8/15
    # Σ_u 2 n_u0 n_u1 / (m_u − 1): [1,1] → 0, [0,0,1] → 2·2·1/2 = 2, [0,1] → 2·1·1/1 = 2, [0,0,0] → 0 = 4
    # D_o = 4 / 10 = 0.4
    # α = 1 − 0.4 / (8/15) = 1 − 0.75 = 0.25
    # (coincidence matrix check: o₀₁ = 2·1/2 + 1·1/1 = 2; α = 1 − (n−1)·o₀₁ / (n₀ n₁) = 1 − 9·2/24 = 0.25)
    assert krippendorff_alpha(KRIPP_UNITS) == pytest.approx(0.25, abs=TOL)


def test_krippendorff_alpha_edges() -> None:
    # One class among the pairable ratings: D_e = 0 → NaN, even if a single rating has the other class.
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1, 1]]))
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1], [0]]))
    # Nothing pairable → NaN.
    assert math.isnan(krippendorff_alpha([[1], [0], [1]]))
    assert math.isnan(krippendorff_alpha([]))
    # Two annotators, complete data, balanced disagreement: n = 4, n₀ = n₁ = 2,
    # D_e = 2·2·2 / 12 = 2/3, D_o = (2 + 2)/4 = 1 → α = 1 − 1/(2/3) = −0.5.
    assert krippendorff_alpha([[1, 0], [0, 1]]) == pytest.approx(-0.5, abs=TOL)


def test_raw_agreement_by_hand() -> None:
    # [1,1] → 1 pair, agrees → 1; [0,0,1] → pairs (0,0), (0,1), (0,1) → 1/3; [1] skipped;
    # [0,1] → 0; [0,0,0] → 1.  Mean over 4 units = (1 + 1/3 + 0 + 1) / 4 = (7/3)/4 = 7/12
    assert raw_agreement(KRIPP_UNITS) == pytest.approx(7 / 12, abs=TOL)
    # Two annotators: the share of units agreed on, 7/10 for the Cohen table.
    pairs = [list(pair) for pair in zip(COHEN_FIRST, COHEN_SECOND, strict=True)]
    assert raw_agreement(pairs) == pytest.approx(0.7, abs=TOL)
    # All ratings one class: raw agreement is 1 while kappa and alpha say nothing (NaN).
    assert raw_agreement([[1, 1], [1, 1, 1]]) == 1.0
    # No unit with two ratings: NaN.
    assert math.isnan(raw_agreement([[1], [0]]))
    assert math.isnan(raw_agreement([]))


def test_docstring_examples_hold() -> None:
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == 0.5
    assert round(fleiss_kappa([[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1]]), 4) == 0.3333
    assert round(krippendorff_alpha([[1, 1], [0, 0], [1, 0], [0, 0, 0]]), 4) == 0.5556


# --------------------------------------------------------------------------------------------------
# Against reference libraries on random tables
# --------------------------------------------------------------------------------------------------

PREVALENCES = [0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99]


def _prevalence(rng: np.random.Generator) -> float:
    """A share of 1s: often skewed (one of PREVALENCES), otherwise uniform on [0, 1]."""
    return float(rng.choice(PREVALENCES)) if rng.random() < 0.6 else float(rng.random())


def _correlated(rng: np.random.Generator, truth: np.ndarray, prevalence: float) -> np.ndarray:
    """An annotator who copies ``truth`` with a random probability and otherwise draws at ``prevalence``."""
    copy = rng.random(truth.shape) < rng.random()
    return np.where(copy, truth, (rng.random(truth.shape) < prevalence).astype(int))


def test_cohen_kappa_matches_statsmodels_on_random_tables() -> None:
    rng = np.random.default_rng(20240601)
    compared = degenerate = 0
    for _ in range(300):
        n = int(rng.integers(1, 61))
        truth = (rng.random(n) < _prevalence(rng)).astype(int)
        first = _correlated(rng, truth, _prevalence(rng))
        second = _correlated(rng, truth, _prevalence(rng))
        got = cohen_kappa(first.tolist(), second.tolist())

        p, q = first.mean(), second.mean()
        # Chance agreement is perfect exactly when both annotators give one and the same class throughout.
        perfect_chance = (p == q) and p in (0.0, 1.0)
        assert math.isnan(got) == perfect_chance
        if perfect_chance:
            degenerate += 1
            continue

        table = np.zeros((2, 2))
        np.add.at(table, (first, second), 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            reference = cohens_kappa(table).kappa
        assert math.isfinite(reference)
        assert got == pytest.approx(reference, abs=TOL)

        # Direct formula from the table's cells.
        p_o = (table[0, 0] + table[1, 1]) / n
        p_e = (table[1].sum() * table[:, 1].sum() + table[0].sum() * table[:, 0].sum()) / n**2
        assert got == pytest.approx((p_o - p_e) / (1 - p_e), abs=TOL)
        compared += 1
    assert compared >= 200 and degenerate >= 5


def test_fleiss_kappa_matches_statsmodels_on_random_tables() -> None:
    rng = np.random.default_rng(7)
    compared = degenerate = 0
    for _ in range(300):
        n_units = int(rng.integers(1, 41))
        m = int(rng.integers(2, 8))
        truth = (rng.random(n_units) < _prevalence(rng)).astype(int)
        # units × raters
        data = np.stack([_correlated(rng, truth, _prevalence(rng)) for _ in range(m)], axis=1)
        got = fleiss_kappa(data.tolist())

        share = data.mean()
        perfect_chance = share in (0.0, 1.0)  # P̄_e = p² + (1 − p)² = 1 exactly when p is 0 or 1
        assert math.isnan(got) == perfect_chance
        if perfect_chance:
            degenerate += 1
            continue

        table, _ = aggregate_raters(data, n_cat=2)
        reference = sm_fleiss_kappa(table, method="fleiss")
        assert math.isfinite(reference)
        assert got == pytest.approx(reference, abs=TOL)
        compared += 1
    assert compared >= 200 and degenerate >= 3


def _pairable_classes(units: list[list[int]]) -> set[int]:
    return {value for unit in units if len(unit) >= 2 for value in unit}


def test_krippendorff_alpha_matches_the_krippendorff_package_on_random_tables() -> None:
    rng = np.random.default_rng(12345)
    compared = degenerate = with_missing = with_singletons = 0
    for _ in range(300):
        n_annotators = int(rng.integers(2, 7))
        n_units = int(rng.integers(1, 41))
        truth = (rng.random(n_units) < _prevalence(rng)).astype(int)
        ratings = np.stack([_correlated(rng, truth, _prevalence(rng)) for _ in range(n_annotators)]).astype(float)
        missing_share = float(rng.choice([0.0, 0.2, 0.5, 0.8]))
        ratings[rng.random(ratings.shape) < missing_share] = np.nan  # annotators × units, NaN = missing
        units = [[int(v) for v in column if not np.isnan(v)] for column in ratings.T]

        got = krippendorff_alpha(units)
        # Expected disagreement is 0 (chance agreement perfect) when the pairable ratings hold fewer than
        # two classes (or there are none).
        perfect_chance = len(_pairable_classes(units)) < 2
        assert math.isnan(got) == perfect_chance
        if perfect_chance:
            degenerate += 1
            continue

        reference = krippendorff.alpha(reliability_data=ratings, level_of_measurement="nominal")
        assert math.isfinite(reference)
        assert got == pytest.approx(reference, abs=TOL)
        compared += 1
        with_missing += bool(np.isnan(ratings).any())
        with_singletons += any(len(unit) == 1 for unit in units)
    assert compared >= 150 and degenerate >= 5
    assert with_missing >= 50 and with_singletons >= 30


def test_krippendorff_package_agrees_on_the_hand_example() -> None:
    # KRIPP_UNITS as annotators × units with NaN for the missing ratings.
    nan = np.nan
    data = np.array([[1, 0, 1, 0, 0], [1, 0, nan, 1, 0], [nan, 1, nan, nan, 0]])
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert reference == pytest.approx(0.25, abs=TOL)


def test_degenerate_reference_cases_are_nan_in_ragmeter() -> None:
    # The package refuses a single class among all values; ragmeter says NaN.
    with pytest.raises(ValueError):
        krippendorff.alpha(reliability_data=np.ones((2, 2)), level_of_measurement="nominal")
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]]))
    # The other class only in a unit with one rating: the package gives NaN (0/0), so does ragmeter.
    data = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1], [0]]))


# --------------------------------------------------------------------------------------------------
# majority
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "votes, expected",
    [
        ([1], 1),
        ([0], 0),
        ([1, 1, 0], 1),
        ([0, 0, 1], 0),
        ([1, 1, 1, 0], 1),
        ([0, 1, 0, 0], 0),
        ([1, 1, 1, 0, 0], 1),
        ([1, 1], 1),
        ([0, 0], 0),
    ],
)
def test_majority_without_a_tie_ignores_the_tie_rule(votes: list[int], expected: int) -> None:
    for rule in TIE_RULES:
        assert majority(votes, ties=rule) == expected
    assert majority(votes) == expected


@pytest.mark.parametrize("votes", [[1, 0], [0, 1], [1, 1, 0, 0], [0, 1, 0, 1, 1, 0]])
@pytest.mark.parametrize("rule, expected", [("undefined", None), ("positive", 1), ("negative", 0)])
def test_majority_tie_rules(votes: list[int], rule: str, expected: int | None) -> None:
    assert majority(votes, ties=rule) == expected


def test_majority_default_rule_is_undefined() -> None:
    assert majority([1, 0]) is None
    assert TIE_RULES == ("undefined", "positive", "negative")


def test_majority_rejects_a_bad_rule_and_no_votes() -> None:
    with pytest.raises(ValueError, match="ties"):
        majority([1, 0], ties="coin")
    with pytest.raises(ValueError, match="ties"):
        majority([1, 1, 0], ties="Positive")  # a bad rule is refused even without a tie
    with pytest.raises(ValueError):
        majority([])


# --------------------------------------------------------------------------------------------------
# label_agreement
# --------------------------------------------------------------------------------------------------


def test_label_agreement_with_two_annotators_sets_cohen() -> None:
    units = [{"ann": a, "bob": b} for a, b in zip(COHEN_FIRST, COHEN_SECOND, strict=True)]
    units += [{"ann": 1}, {"bob": 0}]  # rated by one annotator only
    agreement = label_agreement("helpful", units)
    assert isinstance(agreement, LabelAgreement)
    assert agreement.label == "helpful"
    assert agreement.annotators == ("ann", "bob")
    assert agreement.n_units == 12  # every unit with a rating
    assert agreement.n_shared == 10  # the two single ratings are not shared
    assert agreement.n_ratings == 22  # 10·2 + 1 + 1
    assert agreement.cohen_kappa == pytest.approx(0.4, abs=TOL)  # the hand table above
    assert agreement.fleiss_kappa is None
    # Shared units only: 7 of 10 agree.
    assert agreement.raw_agreement == pytest.approx(0.7, abs=TOL)
    # 1s: 6 (ann) + 5 (bob) + 1 (ann alone) = 12 of 22 ratings.
    assert agreement.prevalence == pytest.approx(12 / 22, abs=TOL)
    # α over the 10 shared units: n = 20, n₁ = 11, n₀ = 9; D_e = 2·9·11/(20·19) = 198/380;
    # three units disagree, each 2·1·1/1 = 2 → D_o = 6/20; α = 1 − (6/20)/(198/380) = 1 − 2280/3960 = 14/33.
    assert agreement.krippendorff_alpha == pytest.approx(14 / 33, abs=TOL)
    # The three disagreeing units are 1–1 ties; single ratings never tie.
    assert agreement.n_ties == 3


def test_label_agreement_with_three_annotators_sets_fleiss_over_complete_units() -> None:
    names = ("a", "b", "c")
    units: list[dict[str, int]] = [dict(zip(names, unit, strict=True)) for unit in FLEISS_UNITS]
    units += [{"a": 1, "b": 0}, {"c": 1}, {}]
    agreement = label_agreement("support_present", units)
    assert agreement.annotators == names
    assert agreement.n_units == 7  # the empty unit is not counted
    assert agreement.n_shared == 6  # 5 complete + the pair
    assert agreement.n_ratings == 18  # 15 + 2 + 1
    assert agreement.cohen_kappa is None
    assert agreement.fleiss_kappa == pytest.approx(4 / 9, abs=TOL)  # the five complete units only
    # Raw: complete units 1 + 1 + 1/3 + 1/3 + 1 = 11/3, the pair 0 → (11/3)/6 = 11/18.
    assert agreement.raw_agreement == pytest.approx(11 / 18, abs=TOL)
    # 1s: 9 in the complete units + 1 + 1 = 11 of 18.
    assert agreement.prevalence == pytest.approx(11 / 18, abs=TOL)
    # α over 6 pairable units: n = 17, n₁ = 10, n₀ = 7 → D_e = 2·7·10/(17·16) = 140/272 = 35/68;
    # Σ 2 n_u0 n_u1/(m_u−1) = [1,1,0]: 2 + [0,1,0]: 2 + [1,0]: 2 = 6 → D_o = 6/17;
    # α = 1 − (6/17)/(35/68) = 1 − 408/595 = 1 − 24/35 = 11/35.
    assert agreement.krippendorff_alpha == pytest.approx(11 / 35, abs=TOL)
    assert agreement.n_ties == 1  # only {a: 1, b: 0}


def test_label_agreement_fleiss_ignores_vote_order() -> None:
    units = [{"a": 1, "b": 1, "c": 0}, {"c": 0, "a": 0, "b": 0}, {"b": 1, "c": 1, "a": 1}, {"c": 1, "b": 0, "a": 0}]
    # Ones per unit 2, 0, 3, 1 (m = 3): per unit 1/3, 1, 1, 1/3 → P̄ = (8/3)/4 = 2/3; p = 6/12 = 0.5,
    # P̄_e = 0.5 → κ = (2/3 − 1/2)/(1/2) = 1/3.
    assert label_agreement("x", units).fleiss_kappa == pytest.approx(1 / 3, abs=TOL)


def test_label_agreement_when_every_rating_is_one_class() -> None:
    agreement = label_agreement("unsafe_content", [{"a": 0, "b": 0}] * 4 + [{"a": 0}])
    assert math.isnan(agreement.cohen_kappa)  # type: ignore[arg-type]
    assert math.isnan(agreement.krippendorff_alpha)
    assert agreement.raw_agreement == 1.0
    assert agreement.prevalence == 0.0
    assert agreement.n_ties == 0
    as_dict = agreement.to_dict()
    assert as_dict["cohen_kappa"] is None
    assert as_dict["krippendorff_alpha"] is None
    assert as_dict["fleiss_kappa"] is None
    assert as_dict["raw_agreement"] == 1.0
    assert as_dict["prevalence"] == 0.0

    three = label_agreement("helpful", [{"a": 1, "b": 1, "c": 1}] * 3)
    assert three.cohen_kappa is None and math.isnan(three.fleiss_kappa)  # type: ignore[arg-type]
    assert three.to_dict()["fleiss_kappa"] is None


def test_label_agreement_to_dict() -> None:
    agreement = label_agreement("helpful", [{"a": 1, "b": 1}, {"a": 0, "b": 1}, {"a": 0, "b": 0}])
    # p_o = 2/3, p₁ = 1/3, q₁ = 2/3 → p_e = 2/9 + 2/9 = 4/9 → κ = (6/9 − 4/9)/(5/9) = 2/5.
    assert agreement.to_dict() == {
        "label": "helpful",
        "annotators": ["a", "b"],
        "n_units": 3,
        "n_shared": 3,
        "n_ratings": 6,
        "raw_agreement": pytest.approx(2 / 3, abs=TOL),
        "prevalence": pytest.approx(0.5, abs=TOL),
        "cohen_kappa": pytest.approx(0.4, abs=TOL),
        "fleiss_kappa": None,
        # α: n = 6, n₁ = n₀ = 3, D_e = 2·3·3/30 = 0.6, D_o = 2/6 → α = 1 − (1/3)/0.6 = 4/9.
        "krippendorff_alpha": pytest.approx(4 / 9, abs=TOL),
        "n_ties": 1,
    }


def test_label_agreement_with_nothing_shared_or_no_units() -> None:
    single = label_agreement("helpful", [{"a": 1}, {"b": 0}])
    assert single.n_units == 2 and single.n_shared == 0
    assert math.isnan(single.cohen_kappa)  # type: ignore[arg-type]  # no unit rated by both
    assert math.isnan(single.raw_agreement) and math.isnan(single.krippendorff_alpha)
    assert single.prevalence == 0.5
    assert single.to_dict()["raw_agreement"] is None and single.to_dict()["cohen_kappa"] is None

    empty = label_agreement("helpful", [])
    assert empty.annotators == () and empty.n_units == 0 and empty.n_ratings == 0
    assert empty.cohen_kappa is None and empty.fleiss_kappa is None
    assert math.isnan(empty.prevalence) and math.isnan(empty.raw_agreement)
    assert empty.to_dict()["prevalence"] is None


def test_label_agreement_matches_the_references_on_random_annotations() -> None:
    rng = np.random.default_rng(99)
    compared_cohen = 0
    for _ in range(60):
        n_annotators = int(rng.integers(2, 5))
        names = [f"ann{i}" for i in range(n_annotators)]
        n_units = int(rng.integers(5, 30))
        truth = (rng.random(n_units) < _prevalence(rng)).astype(int)
        ratings = np.stack([_correlated(rng, truth, _prevalence(rng)) for _ in names]).astype(float)
        ratings[rng.random(ratings.shape) < 0.2] = np.nan
        units = [
            {name: int(v) for name, v in zip(names, column, strict=True) if not np.isnan(v)} for column in ratings.T
        ]
        agreement = label_agreement("x", units)
        present = [name for name in names if any(name in u for u in units)]
        assert agreement.annotators == tuple(sorted(present))

        pairable = [list(u.values()) for u in units if len(u) >= 2]
        if len(_pairable_classes(pairable)) == 2:
            reference = krippendorff.alpha(reliability_data=ratings, level_of_measurement="nominal")
            assert agreement.krippendorff_alpha == pytest.approx(reference, abs=TOL)
        else:
            assert math.isnan(agreement.krippendorff_alpha)

        if len(present) > 2:
            complete = np.array([[u[name] for name in present] for u in units if len(u) == len(present)])
            if len(complete) and 0 < complete.mean() < 1:
                reference = sm_fleiss_kappa(aggregate_raters(complete, n_cat=2)[0], method="fleiss")
                assert agreement.fleiss_kappa == pytest.approx(reference, abs=TOL)
            else:
                assert agreement.fleiss_kappa is not None and math.isnan(agreement.fleiss_kappa)
        elif len(present) == 2:
            first, second = present
            both = np.array([(u[first], u[second]) for u in units if len(u) == 2], dtype=int).reshape(-1, 2)
            # κ is undefined when nothing is shared or both annotators give one and the same class throughout
            if len(both) == 0 or (both.min() == both.max()):
                assert math.isnan(agreement.cohen_kappa)  # type: ignore[arg-type]
            else:
                table = np.zeros((2, 2))
                np.add.at(table, (both[:, 0], both[:, 1]), 1)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    reference = cohens_kappa(table).kappa
                assert agreement.cohen_kappa == pytest.approx(reference, abs=TOL)
                compared_cohen += 1
    assert compared_cohen >= 15  # seed 99 gives 20 two-annotator tables with both classes
