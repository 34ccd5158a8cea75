"""``ragmeter run`` as a library function (ragmeter.app.run): the folder it writes, and a library caller's
default listener."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import records_file

import ragmeter
from ragmeter.app.run import RunPlan, RunRequest, run_to_folder
from ragmeter.core.errors import ConfigError, InputError
from ragmeter.io import readers

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


def test_a_run_detects_its_input_format_once_however_often_it_reads_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request is resolved once: the input check, the scoring and the HTML page's records all read the one
    plan's input file."""
    source = records_file(tmp_path, 4)
    detected: list[Path] = []
    real = readers.detect_format

    def counting(path: str | Path) -> str:
        detected.append(Path(path))
        return real(path)

    monkeypatch.setattr(readers, "detect_format", counting)
    plan = RunPlan.of(RunRequest(source, tmp_path / "out", settings=SETTINGS, judge=None))
    outcome = run_to_folder(plan)
    assert outcome.records is not None and len(list(outcome.records())) == 4
    assert detected == [source]
    manifest = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert manifest["input_format"] == "auto"  # as given: a resumed run detects it as the first did


def test_the_plan_checks_every_output_against_every_input_before_any_work(tmp_path: Path) -> None:
    source = records_file(tmp_path, 2)
    patterns = tmp_path / "idk.txt"
    patterns.write_text("i do not know\n", encoding="utf-8")
    plan = RunPlan.of(
        RunRequest(source, tmp_path / "out", metrics=["token_f1"], html=patterns, extra_inputs=(patterns,))
    )
    with pytest.raises(ConfigError, match=r"--html .*idk.txt"):
        plan.targets()
    with pytest.raises(ConfigError, match=r"--html .*idk.txt"):
        run_to_folder(plan)
    assert patterns.read_text(encoding="utf-8") == "i do not know\n"
    assert not (tmp_path / "out").exists()


def test_an_explicit_format_keeps_its_own_check_through_the_plan(tmp_path: Path) -> None:
    source = records_file(tmp_path, 2)
    table = tmp_path / "records.csv"
    table.write_bytes(source.read_bytes())
    with pytest.raises(InputError, match=r"--input-format csv"):
        run_to_folder(RunRequest(table, tmp_path / "out", metrics=["token_f1"], input_format="csv"))
