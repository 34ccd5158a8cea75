"""The pairwise-preference reader (ragmeter.human.preferences) that benchmarks/validity/bench_preferences.py uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.core.errors import InputError
from ragmeter.human.preferences import read_preferences

GOOD = {
    "id": "p1",
    "conversation_id": "c1",
    "question": "Capital of France?",
    "reference": "Paris",
    "response_a": "Paris",
    "response_b": "Lyon",
    "model_a": "m1",
    "model_b": "m2",
    "preferences": {"ann1": "A", "ann2": 0.5, "ann3": "tie"},
    "aspects": {"faithfulness": [-1, "B"], "completeness": {"ann1": 0.25}},
}


def write(path: Path, *objects: object) -> Path:
    path.write_text("\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects) + "\n", encoding="utf-8")
    return path


def test_a_valid_file_gives_two_records_per_pair_and_mean_preferences(tmp_path: Path) -> None:
    second = {
        "id": 7,
        "question": "Who wrote Hamlet?",
        "references": ["Shakespeare", "William Shakespeare"],
        "history": [{"role": "user", "text": "A play question."}],
        "response_a": "",
        "response_b": "Shakespeare wrote it.",
        "preferences": ["B", -0.25],
    }
    pairs = read_preferences(write(tmp_path / "prefs.jsonl", GOOD, "", second))

    first, other = pairs
    assert first.id == "p1" and first.cluster == "c1" and first.annotators == 3
    assert first.preference == pytest.approx((1 + 0.5 + 0) / 3)  # A = +1, tie = 0
    assert first.aspects == {"faithfulness": pytest.approx(-1.0), "completeness": pytest.approx(0.25)}
    assert (first.a.id, first.a.answer, first.a.model_id, first.a.conversation_id) == ("p1/A", "Paris", "m1", "c1")
    assert (first.b.id, first.b.answer, first.b.model_id) == ("p1/B", "Lyon", "m2")
    assert first.a.references == first.b.references == ("Paris",)
    assert other.id == "7" and other.cluster == "7" and other.annotators == 2 and other.aspects == {}
    assert other.preference == pytest.approx((-1 - 0.25) / 2)
    assert other.a.answer == "" and other.b.history[0].text == "A play question."
    assert other.b.references == ("Shakespeare", "William Shakespeare")

    result = ragmeter.evaluate([first.a, first.b], metrics=["exact_match"])
    assert list(result.scores["exact_match"]) == [1.0, 0.0]


def _without(key: str) -> dict:
    return {k: v for k, v in GOOD.items() if k != key}


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        (_without("preferences"), "preferences", "missing"),
        (_without("response_b"), "response_b", "missing"),
        (_without("reference"), "reference", "non-empty reference"),
        ({**GOOD, "preferences": {"ann1": "A", "ann2": 1.5}}, "preferences.ann2", "out of range"),
        ({**GOOD, "preferences": {"ann1": True}}, "preferences.ann1", "expected a number"),
        ({**GOOD, "preferences": {}}, "preferences", "no annotator"),
        ({**GOOD, "aspects": {"faithfulness": ["A", "a"]}}, "aspects.faithfulness[1]", "unknown label 'a'"),
        ({**GOOD, "answer": "Paris"}, "answer", "response_a"),
        ({**GOOD, "preference": 1}, "preference", "unknown field"),
    ],
)
def test_a_bad_line_names_the_file_the_line_and_the_field(tmp_path: Path, bad: dict, field: str, words: str) -> None:
    path = write(tmp_path / "prefs.jsonl", {**GOOD, "id": "ok"}, bad)
    with pytest.raises(InputError) as caught:
        read_preferences(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert words in caught.value.reason
    assert f"prefs.jsonl:2 field '{field}'" in str(caught.value)


def test_a_duplicate_id_and_broken_json_name_their_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="duplicate id 'p1', first on line 1") as caught:
        read_preferences(write(tmp_path / "dup.jsonl", GOOD, GOOD))
    assert (caught.value.line, caught.value.field) == (2, "id")
    with pytest.raises(InputError, match="not valid JSON") as caught:
        read_preferences(write(tmp_path / "broken.jsonl", GOOD, "", '{"id": '))
    assert caught.value.line == 3
    with pytest.raises(InputError, match="no pair"):
        read_preferences(write(tmp_path / "empty.jsonl", ""))
