"""Seed 003's grounding and generation metrics (rates of answer labels) on a hand-built dataset whose
every rate is worked out by hand, the three ``source_labels`` modes, and label validation in native
records."""

from __future__ import annotations

import math
from typing import Any

import pytest
from statsmodels.stats.proportion import proportion_confint

import ragmeter
from ragmeter import InputError, Settings, evaluate, get_metric, record_from_dict
from ragmeter.metrics import Aggregation
from ragmeter.metrics.labels import conditional_fabrication_rate, derived_source_labels, label_rate

TOL = 1e-12

GROUNDING = [
    "grounding_presence_rate",
    "unsupported_claim_rate",
    "contradiction_rate",
    "citation_presence_rate",
    "conditional_fabrication_rate",
]
GENERATION = ["proper_action_rate", "on_topic_rate", "helpfulness_rate", "incompleteness_rate", "unsafe_content_rate"]
ALL = GROUNDING + GENERATION

# label order in the table below
KEYS = (
    "support_present",
    "unsupported_claim_present",
    "contradicted_claim_present",
    "source_cited",
    "fabricated_source",
    "proper_action",
    "response_on_topic",
    "helpful",
    "incomplete",
    "unsafe_content",
)
M = "missing"  # the label is absent from the record
T = None  # annotators tied (null)

# Eight answers. Columns: g v x z f d o h n r (seed 003's letters).
#            g  v  x  z  f  d  o  h  n  r
TABLE: dict[str, tuple[Any, ...]] = {
    "r1": (1, 0, 0, 1, 0, 1, 1, 1, 0, 0),
    "r2": (1, 1, 0, 1, 1, 1, 1, 0, 1, 0),
    "r3": (0, 1, 1, 0, 0, 0, 1, 0, 1, 0),
    "r4": (1, 0, 0, 1, 0, 1, 1, 1, 0, 0),
    "r5": (0, 0, 0, 0, M, 1, 0, 0, 0, 1),
    "r6": (1, 0, T, 1, 1, 1, 1, 1, 0, 0),
    "r7": (T, 1, 0, 1, 0, 0, 1, M, 1, 0),
    "r8": (1, 0, 0, M, M, 1, T, 1, 0, 0),
}

# Answers and retrieved doc_ids; the [CIT:…] markers give the derived (z, f), chosen to differ from the
# human labels where that tells the modes apart:
#   r1 cites d1, retrieved d1 d2        → (1, 0)      human (1, 0)
#   r2 cites d1, retrieved d1           → (1, 0)      human (1, 1)
#   r3 cites d1, retrieved d1           → (1, 0)      human (0, 0)
#   r4 cites d2 and d3, retrieved d2    → (1, 1)      human (1, 0)
#   r5 cites d1, retrieved d1           → (1, 0)      human (0, –)
#   r6 no marker                        → (0, 0)      human (1, 1)
#   r7 cites " d1 " (spaces ignored)    → (1, 0)      human (1, 0)
#   r8 cites d5, retrieved d1 d2        → (1, 1)      human (–, –)
ANSWERS: dict[str, tuple[str, list[str]]] = {
    "r1": ("Alpha [CIT:d1].", ["d1", "d2"]),
    "r2": ("Beta [CIT:d1].", ["d1"]),
    "r3": ("Gamma [CIT:d1].", ["d1"]),
    "r4": ("Delta [CIT:d2] [CIT:d3].", ["d2"]),
    "r5": ("Epsilon [CIT:d1].", ["d1"]),
    "r6": ("Zeta.", ["d1"]),
    "r7": ("Eta [CIT: d1 ].", ["d1"]),
    "r8": ("Theta [CIT:d5].", ["d1", "d2"]),
}


def _records() -> list[dict[str, Any]]:
    records = []
    for rid, row in TABLE.items():
        answer, doc_ids = ANSWERS[rid]
        records.append(
            {
                "id": rid,
                "question": f"Question {rid}?",
                "answer": answer,
                "contexts": [{"doc_id": d, "text": f"Text of {d}."} for d in doc_ids],
                "labels": {key: value for key, value in zip(KEYS, row, strict=True) if value != M},
            }
        )
    return records


def _run(mode: str, metrics: list[str] = ALL) -> ragmeter.EvalResult:
    return evaluate(_records(), metrics=metrics, settings=Settings(source_labels=mode))


# Rates by hand in "human" mode: (k, n) = (sum of the label, answers with it), the undefined ones by reason.
#   g: r7 tied → r1..r6, r8: 1+1+0+1+0+1+1 = 5 of 7
#   v: 0+1+1+0+0+0+1+0 = 3 of 8
#   x: r6 tied → 0+0+1+0+0+0+0 = 1 of 7
#   z: r8 has none → 1+1+0+1+0+1+1 = 5 of 7
#   z·f / z: cited (z = 1) are r1 r2 r4 r6 r7, f = 0 1 0 1 0 → Σ z f = 2, Σ z = 5 → 2/5;
#            r3 and r5 (z = 0) are outside the cited subset (r5 lacks f, which does not matter), r8 lacks z
#   d: 1+1+0+1+1+1+0+1 = 6 of 8
#   o: r8 tied → 1+1+1+1+0+1+1 = 6 of 7
#   h: r7 has none → 1+0+0+1+0+1+1 = 4 of 7
#   n: 0+1+1+0+0+0+1+0 = 3 of 8
#   r: 0+0+0+0+1+0+0+0 = 1 of 8
OUTSIDE = "answer cites no source (outside the cited subset)"
HUMAN: dict[str, tuple[int, int, dict[str, int]]] = {
    "grounding_presence_rate": (5, 7, {"annotators tied on support_present": 1}),
    "unsupported_claim_rate": (3, 8, {}),
    "contradiction_rate": (1, 7, {"annotators tied on contradicted_claim_present": 1}),
    "citation_presence_rate": (5, 7, {"no source_cited label": 1}),
    "conditional_fabrication_rate": (2, 5, {OUTSIDE: 2, "no source_cited label": 1}),
    "proper_action_rate": (6, 8, {}),
    "on_topic_rate": (6, 7, {"annotators tied on response_on_topic": 1}),
    "helpfulness_rate": (4, 7, {"no helpful label": 1}),
    "incompleteness_rate": (3, 8, {}),
    "unsafe_content_rate": (1, 8, {}),
}


@pytest.mark.parametrize("name", ALL)
def test_every_rate_matches_the_hand_count(name: str) -> None:
    k, n, reasons = HUMAN[name]
    summary = _run("human").summary(name)
    assert summary.statistic == "rate"
    assert summary.value == pytest.approx(k / n, abs=TOL)
    assert summary.n == n
    assert summary.n_undefined == 8 - n
    assert dict(summary.undefined_reasons) == reasons
    assert dict(summary.notes) == {}
    # Rates get the Wilson interval (no conversation clusters here); statsmodels is the reference.
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert summary.ci_low == pytest.approx(low, abs=TOL)
    assert summary.ci_high == pytest.approx(high, abs=TOL)
    assert "ci:wilson" in summary.signature.render()


def test_the_wilson_interval_of_five_of_seven_by_hand() -> None:
    # z = 1.959963984540054, z² = 3.8414588207, n = 7, p̂ = 5/7 = 0.7142857143
    # z²/n = 0.5487798315 → denominator 1.5487798315
    # centre = (0.7142857143 + 0.2743899158) / 1.5487798315 = 0.9886756300 / 1.5487798315 = 0.6383577639
    # p̂(1−p̂)/n = 10/343 = 0.0291545190, z²/4n² = 3.8414588207/196 = 0.0195992797 → 0.0487537986
    # sqrt = 0.2208026237, × z = 0.4327651902, / 1.5487798315 = 0.2794233121
    # → (0.3589344518, 0.9177810760)
    summary = _run("human", ["grounding_presence_rate"]).summary("grounding_presence_rate")
    assert summary.ci_low == pytest.approx(0.3589344518, abs=1e-9)
    assert summary.ci_high == pytest.approx(0.9177810760, abs=1e-9)


def test_per_item_values_and_reasons() -> None:
    result = _run("human", ["conditional_fabrication_rate", "helpfulness_rate"])
    items = {row["id"]: row for row in result.items()}
    assert [items[r]["scores"]["conditional_fabrication_rate"] for r in TABLE] == [
        0.0,
        1.0,
        None,
        0.0,
        None,
        1.0,
        0.0,
        None,
    ]
    assert items["r3"]["undefined"]["conditional_fabrication_rate"] == OUTSIDE
    assert items["r8"]["undefined"]["conditional_fabrication_rate"] == "no source_cited label"
    assert items["r7"]["undefined"]["helpfulness_rate"] == "no helpful label"
    assert [items[r]["scores"]["helpfulness_rate"] for r in TABLE] == [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, None, 1.0]


def test_conditional_fabrication_is_a_ratio_of_sums_not_a_mean_of_rates() -> None:
    # Over the 7 answers with z (r8 lacks it; r5's missing f is set to 1 here to show z = 0 hides it):
    z = [1, 1, 0, 1, 0, 1, 1]
    f = [0, 1, 0, 0, 1, 1, 0]
    # Σ z·f = 0 + 1 + 0 + 0 + 0 + 1 + 0 = 2, Σ z = 5 → 0.4 (the mean of f would be 3/7)
    assert conditional_fabrication_rate(z, f) == pytest.approx(0.4, abs=TOL)
    assert conditional_fabrication_rate(z, f) == pytest.approx(HUMAN["conditional_fabrication_rate"][0] / 5)
    assert conditional_fabrication_rate([1, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(1 / 3, abs=TOL)
    assert conditional_fabrication_rate([1, 1], [1, 1]) == 1.0
    assert math.isnan(conditional_fabrication_rate([0, 0, 0], [1, 1, 0]))  # no answer cites
    assert math.isnan(conditional_fabrication_rate([], []))
    with pytest.raises(ValueError):
        conditional_fabrication_rate([1, 0], [1])


def test_label_rate() -> None:
    # Helpfulness over the 7 answers that carry h: 1+0+0+1+0+1+1 = 4 of 7.
    assert label_rate([1, 0, 0, 1, 0, 1, 1]) == pytest.approx(4 / 7, abs=TOL)
    assert label_rate([1, 0, 1, 1]) == 0.75
    assert label_rate([0, 0]) == 0.0
    assert label_rate([1]) == 1.0
    assert math.isnan(label_rate([]))


@pytest.mark.parametrize(
    "answer, retrieved, expected",
    [
        ("Paris [CIT:d1]. Big [CIT:d9].", ["d1", "d2"], (1, 1)),
        ("Paris [CIT:d1].", ["d1", "d2"], (1, 0)),
        ("Paris [CIT:d1] [CIT:d1][CIT:d2].", ["d1", "d2"], (1, 0)),
        ("Paris [CIT: d2 ].", ["d2"], (1, 0)),  # spaces around the doc_id are ignored
        ("Paris.", ["d1"], (0, 0)),
        ("Paris [CIT:].", ["d1"], (0, 0)),  # an empty marker is not a citation
        ("Paris [CIT:d1].", [], (1, 1)),  # nothing retrieved: any citation is fabricated
        ("", [], (0, 0)),
        ("Paris [cit:d1].", ["d2"], (0, 0)),  # the marker is case-sensitive
    ],
)
def test_derived_source_labels(answer: str, retrieved: list[str], expected: tuple[int, int]) -> None:
    assert derived_source_labels(answer, retrieved) == expected


def test_derived_labels_of_the_dataset() -> None:
    derived = {rid: derived_source_labels(answer, ids) for rid, (answer, ids) in ANSWERS.items()}
    assert derived == {
        "r1": (1, 0),
        "r2": (1, 0),
        "r3": (1, 0),
        "r4": (1, 1),
        "r5": (1, 0),
        "r6": (0, 0),
        "r7": (1, 0),
        "r8": (1, 1),
    }


# source_labels modes for z (citation_presence_rate) and Σ z f / Σ z (conditional_fabrication_rate):
#   human   (above): z 5 of 7; z·f 2 of 5.
#   derived: z from markers = 1 1 1 1 1 0 1 1 → 7 of 8, no undefined, no notes;
#            cited r1 r2 r3 r4 r5 r7 r8, f = 0 0 0 1 0 0 1 → 2 of 7; r6 outside the cited subset.
#   auto:    human where given, derived for r8 (z and f) and nothing else:
#            z = 1 1 0 1 0 1 1 | 1 → 6 of 8, one note (r8);
#            cited r1 r2 r4 r6 r7 r8: f = 0 1 0 1 0 (human) | 1 (r8, derived) → 3 of 6, one note (r8);
#            r3 and r5 outside the cited subset.
NOTE = "derived from the answer's [CIT:…] markers"
MODES: dict[str, dict[str, tuple[int, int, dict[str, int], dict[str, int]]]] = {
    "human": {
        "citation_presence_rate": (5, 7, {"no source_cited label": 1}, {}),
        "conditional_fabrication_rate": (2, 5, {OUTSIDE: 2, "no source_cited label": 1}, {}),
    },
    "derived": {"citation_presence_rate": (7, 8, {}, {}), "conditional_fabrication_rate": (2, 7, {OUTSIDE: 1}, {})},
    "auto": {
        "citation_presence_rate": (6, 8, {}, {NOTE: 1}),
        "conditional_fabrication_rate": (3, 6, {OUTSIDE: 2}, {NOTE: 1}),
    },
}


@pytest.mark.parametrize("mode", ["human", "derived", "auto"])
def test_source_labels_modes(mode: str) -> None:
    result = _run(mode)
    for name, (k, n, reasons, notes) in MODES[mode].items():
        summary = result.summary(name)
        assert summary.value == pytest.approx(k / n, abs=TOL), name
        assert (summary.n, summary.n_undefined) == (n, 8 - n), name
        assert dict(summary.undefined_reasons) == reasons, name
        assert dict(summary.notes) == notes, name
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert summary.ci_low == pytest.approx(low, abs=TOL)
        assert summary.ci_high == pytest.approx(high, abs=TOL)
        assert f"source_labels:{mode}" in summary.signature.render(), name
        assert f"source_labels:{mode}" in result.signatures[name].render()
    # The other eight rates read only human labels and do not depend on the mode (nor name it).
    for name in ALL:
        if name in MODES[mode]:
            continue
        k, n, reasons = HUMAN[name]
        summary = result.summary(name)
        assert summary.value == pytest.approx(k / n, abs=TOL), name
        assert dict(summary.undefined_reasons) == reasons
        assert "source_labels" not in summary.signature.render()


def test_auto_mode_notes_land_on_the_derived_item_only() -> None:
    result = _run("auto", ["citation_presence_rate", "conditional_fabrication_rate"])
    items = {row["id"]: row for row in result.items()}
    assert items["r8"]["notes"] == {"citation_presence_rate": NOTE, "conditional_fabrication_rate": NOTE}
    assert items["r8"]["scores"] == {"citation_presence_rate": 1.0, "conditional_fabrication_rate": 1.0}
    assert all("notes" not in items[rid] for rid in TABLE if rid != "r8")


def test_auto_mode_derives_f_alone_when_only_z_is_given() -> None:
    # z given (1), f missing: auto takes z from the label and f from the markers (d9 not retrieved → 1).
    record = {
        "id": "a",
        "question": "q",
        "answer": "X [CIT:d9].",
        "contexts": [{"doc_id": "d1", "text": "t"}],
        "labels": {"source_cited": 1},
    }
    summary = evaluate(
        [record], metrics=["conditional_fabrication_rate"], settings=Settings(source_labels="auto")
    ).summary("conditional_fabrication_rate")
    assert summary.value == 1.0 and summary.n == 1 and dict(summary.notes) == {NOTE: 1}
    # Human mode: no f label → undefined.
    summary = evaluate(
        [record], metrics=["conditional_fabrication_rate"], settings=Settings(source_labels="human")
    ).summary("conditional_fabrication_rate")
    assert math.isnan(summary.value) and summary.n == 0
    assert dict(summary.undefined_reasons) == {"no fabricated_source label": 1}


def test_a_tie_on_source_cited_is_not_derived_in_auto_mode() -> None:
    # A null label is present (annotators tied): auto keeps the human outcome, undefined.
    record = {
        "id": "a",
        "question": "q",
        "answer": "X [CIT:d1].",
        "contexts": [{"doc_id": "d1", "text": "t"}],
        "labels": {"source_cited": None},
    }
    summary = evaluate([record], metrics=["citation_presence_rate"]).summary("citation_presence_rate")
    assert summary.n == 0
    assert dict(summary.undefined_reasons) == {"annotators tied on source_cited": 1}
    assert "source_labels:auto" in summary.signature.render()  # auto is the default


def test_records_without_labels_are_undefined_with_the_reason() -> None:
    records = [{"id": str(i), "question": "q", "answer": "a"} for i in range(3)]
    result = evaluate(records, metrics=GENERATION)
    summary = result.summary("helpfulness_rate")
    assert math.isnan(summary.value) and summary.n == 0 and summary.n_undefined == 3
    assert dict(summary.undefined_reasons) == {"no helpful label": 3}
    assert math.isnan(summary.ci_low) and math.isnan(summary.ci_high)  # type: ignore[arg-type]


def test_boolean_labels_count_as_0_and_1() -> None:
    records = [
        {"id": "a", "question": "q", "answer": "x", "labels": {"helpful": True}},
        {"id": "b", "question": "q", "answer": "x", "labels": {"helpful": False}},
        {"id": "c", "question": "q", "answer": "x", "labels": {"helpful": True}},
    ]
    summary = evaluate(records, metrics=["helpfulness_rate"]).summary("helpfulness_rate")
    assert summary.value == pytest.approx(2 / 3, abs=TOL) and summary.n == 3


def test_the_metrics_are_registered_as_rates() -> None:
    lower_is_better = {
        "unsupported_claim_rate",
        "contradiction_rate",
        "conditional_fabrication_rate",
        "incompleteness_rate",
        "unsafe_content_rate",
    }
    for name in ALL:
        metric = get_metric(name)
        assert metric.aggregation is Aggregation.RATE
        assert metric.value_range == (0.0, 1.0)
        assert metric.higher_is_better is (name not in lower_is_better)
        assert metric.family == ("grounding" if name in GROUNDING else "generation")
    assert [m.name for m in ragmeter.list_metrics("grounding")] == GROUNDING
    assert [m.name for m in ragmeter.list_metrics("generation")] == GENERATION


def test_family_names_select_the_ten_rates() -> None:
    result = evaluate(_records(), metrics=["grounding", "generation"], settings=Settings(source_labels="human"))
    assert result.metrics == ALL


# --------------------------------------------------------------------------------------------------
# Invalid labels in native records
# --------------------------------------------------------------------------------------------------


def _record(**extra: Any) -> dict[str, Any]:
    return {"id": "a", "question": "q", "answer": "x", **extra}


@pytest.mark.parametrize("value", [2, "yes", -1, 0.5, "1", [1]])
def test_an_invalid_answer_label_raises_input_error(value: Any) -> None:
    with pytest.raises(InputError) as caught:
        evaluate([_record(labels={"helpful": value})], metrics=["helpfulness_rate"])
    assert caught.value.field == "labels.helpful"
    assert "labels.helpful" in str(caught.value)
    assert caught.value.line == 1
    with pytest.raises(InputError, match=r"labels\.helpful"):
        record_from_dict(_record(labels={"helpful": value}))


def test_the_error_names_the_position_of_the_bad_record() -> None:
    records = [_record(labels={"helpful": 1}), _record(labels={"unsafe_content": "no"})]
    with pytest.raises(InputError) as caught:
        evaluate(records, metrics=["unsafe_content_rate"])
    assert caught.value.field == "labels.unsafe_content"
    assert caught.value.line == 2


@pytest.mark.parametrize("value", [2, "yes"])
def test_an_invalid_chunk_label_raises_input_error(value: Any) -> None:
    record = _record(contexts=[{"doc_id": "d1", "text": "t", "labels": {"misleading": value}}])
    with pytest.raises(InputError) as caught:
        evaluate([record], metrics=["helpfulness_rate"])
    assert caught.value.field == "contexts[0].labels.misleading"
    assert "contexts[0].labels.misleading" in str(caught.value)


def test_valid_and_unknown_labels_are_kept() -> None:
    record = record_from_dict(
        _record(
            labels={"helpful": True, "incomplete": None, "custom": "yes"},
            contexts=[{"doc_id": "d1", "text": "t", "labels": {"misleading": 0}}],
        )
    )
    assert record.labels == {"helpful": 1, "incomplete": None, "custom": "yes"}
    assert record.contexts[0].labels == {"misleading": 0}
