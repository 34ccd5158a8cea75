"""``ragmeter run`` as a library function (ragmeter.app.run): the folder it writes, and a library caller's
default listener."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import records_file

import ragmeter
from ragmeter.app.run import RunRequest, run_to_folder
from ragmeter.core.errors import InputError

SETTINGS = ragmeter.Settings(n_resamples=200)


def test_the_folder_holds_what_evaluate_gives(tmp_path: Path) -> None:
    source = records_file(tmp_path, 12)
    outcome = run_to_folder(
        RunRequest(source, tmp_path / "out", metrics=["token_f1", "total_tokens"], settings=SETTINGS)
    )
    direct = ragmeter.evaluate(ragmeter.read_records(source), metrics=["token_f1", "total_tokens"], settings=SETTINGS)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    figures = {s["metric"]: s["value"] for s in summary["summaries"]}
    assert figures == {
        "token_f1": direct.summary("token_f1").value,
        "total_tokens": direct.summary("total_tokens").value,
    }
    rows = [json.loads(line) for line in (tmp_path / "out" / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in rows] == [f"q{i}" for i in range(12)]
    assert outcome.result is not None and len(outcome.result) == 12


def test_a_bad_record_raises_for_a_library_caller_and_nothing_is_written(tmp_path: Path) -> None:
    source = records_file(tmp_path, 3)
    source.write_text(source.read_text(encoding="utf-8") + '{"id": "bad", "question": 3}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"records.jsonl:4 field .question."):
        run_to_folder(RunRequest(source, tmp_path / "out", metrics=["token_f1"], settings=SETTINGS))
    assert not (tmp_path / "out").exists()
    outcome = run_to_folder(
        RunRequest(source, tmp_path / "out", metrics=["token_f1"], settings=SETTINGS, skip_invalid=True)
    )
    assert outcome.result is not None and len(outcome.result) == 3
