"""A value outside a seed 003 label's 0/1 (``read_human``, which ``agree`` and ``estimate`` read through) is the
error ``labels merge`` gives for the same cell: file, line, field and what was found."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ragmeter.cli import main
from ragmeter.core.errors import InputError
from ragmeter.human.with_people import read_human


def _with_seven(source: Path, target: Path) -> int:
    """``source`` with support_present of its first answer row set to 7; returns that row's line (no cell of
    the demo files spans lines before it)."""
    with source.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    column = rows[0].index("support_present")
    first = next(i for i, row in enumerate(rows) if i and row[3] == "answer")
    rows[first][column] = "7"
    with target.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return first + 1


def test_seven_in_a_zero_one_label_is_the_error_labels_merge_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", str(tmp_path)]) == 0
    bad = tmp_path / "ana.csv"
    line = _with_seven(tmp_path / "demo-labels-ana.csv", bad)
    assert line == 2
    expected = f"{bad}:2 field 'support_present': expected 0 or 1, found '7'"
    with pytest.raises(InputError) as caught:
        read_human(bad, "support_present")
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(bad), 2, "support_present")
    assert str(caught.value).startswith(expected) and "labels merge" in str(caught.value)
    capsys.readouterr()
    assert main(["labels", "merge", str(tmp_path / "demo.jsonl"), str(bad), "-o", str(tmp_path / "m.jsonl")]) == 2
    assert f"error: {expected}" in capsys.readouterr().err


def test_an_annotators_value_in_an_object_names_the_annotator(tmp_path: Path) -> None:
    human = tmp_path / "human.jsonl"
    rows = [{"id": "q1", "helpful": {"ana": 1, "ben": 0}}, {"id": "q2", "helpful": {"ana": 1, "ben": 7}}]
    human.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_human(human, "helpful")
    assert (caught.value.line, caught.value.field) == (2, "helpful.ben")
    assert "expected 0 or 1, found 7" in str(caught.value)


def test_zero_one_as_numbers_and_other_labels_of_any_value_are_read(tmp_path: Path) -> None:
    human = tmp_path / "human.jsonl"
    rows = [
        {"id": "q1", "helpful": 1.0, "rating": 7},
        {"id": "q2", "helpful": "0", "rating": 2.5},
        {"id": "q3", "helpful": True, "rating": -1},
    ]
    human.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert read_human(human, "helpful") == {
        ("q1", None): {"human:row1": 1.0},
        ("q2", None): {"human:row2": 0.0},
        ("q3", None): {"human:row3": 1.0},
    }
    assert [v for votes in read_human(human, "rating").values() for v in votes.values()] == [7.0, 2.5, -1.0]
