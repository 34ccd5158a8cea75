"""``ragmeter metrics``: an aligned table whose columns never run into each other and whose lines fit the terminal
(it once printed ``answer,references,judgeJudge's 1–5 …``)."""

from __future__ import annotations

import pytest

from ragmeter.cli import main

COLUMNS = ("metric", "family", "range", "needs", "description")


def table(width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The table's lines (up to the blank line before the footnote) on a terminal ``width`` columns wide."""
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= width for line in out.splitlines())
    return out.split("\n\n")[0].splitlines()


def starts(header: str, names: tuple[str, ...]) -> list[int]:
    return [header.index(name) for name in names]


def test_a_wide_terminal_gets_five_aligned_columns_set_apart(monkeypatch, capsys) -> None:
    lines = table(160, monkeypatch, capsys)
    header, rows = lines[0], lines[1:]
    at = starts(header, COLUMNS)
    assert header.split() == list(COLUMNS)
    for line in rows:
        for column in at[1:]:
            # two spaces before every column: a cell never touches the next one
            assert line[column - 2 : column] in ("  ", " ", ""), line
            assert line[column - 2 : column] == "  " or len(line) < column - 1, line
        if line[0] != " ":  # a metric's first line: every cell filled
            assert all(line[column] != " " for column in at[1:4]), line
    row = next(line for line in rows if line.startswith("judge_correctness "))
    cells = [row[a:b].strip() for a, b in zip(at, [*at[1:], None], strict=True)]
    assert cells[:4] == ["judge_correctness", "judged", "[1, 5]", "answer, references, judge"]
    assert cells[4].startswith("Judge's 1–5 rating of the answer's factual agreement")


def test_a_long_needs_list_wraps_within_its_column(monkeypatch, capsys) -> None:
    lines = table(160, monkeypatch, capsys)
    at = starts(lines[0], COLUMNS)
    k = next(i for i, line in enumerate(lines) if line.startswith("RB_llm_idk "))
    first, second = lines[k], lines[k + 1]
    assert first[at[3] : at[4]].strip() == "answer, references,"
    assert second[: at[3]].strip() == "" and second[at[3] : at[4]].strip() == "answerability, judge"


def test_a_narrow_terminal_puts_the_description_beneath_its_row(monkeypatch, capsys) -> None:
    lines = table(80, monkeypatch, capsys)
    assert lines[0].split() == list(COLUMNS[:4])
    at = starts(lines[0], COLUMNS[:4])
    k = next(i for i, line in enumerate(lines) if line.startswith("judge_correctness "))
    assert [lines[k][a:b].strip() for a, b in zip(at, [*at[1:], None], strict=True)] == [
        "judge_correctness",
        "judged",
        "[1, 5]",
        "answer, references, judge",
    ]
    assert lines[k + 1].startswith("    Judge's 1–5 rating of the answer's factual agreement")
