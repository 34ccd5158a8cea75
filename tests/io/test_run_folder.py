"""``ragmeter run``'s output folder: resume after an interruption (with or without a judge), outputs and
extras checked before any scoring, the manifest written only once the judge opened, and no traceback when
the reader of stdout goes away."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import records_file, run_args

from ragmeter import cli
from ragmeter.io.run_folder import RunFolder
from ragmeter.io.writers import ItemsWriter

N = 40
BIG = 600  # more than one batch of 256 records


def items(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]


def manifest_status(out: Path) -> str:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))["status"]


def interrupt_after_first_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the run stop like a Ctrl-C right after its first batch of items was written."""
    write = ItemsWriter.__call__
    calls = []

    def write_then_stop(self: ItemsWriter, rows: list[dict]) -> None:
        write(self, rows)
        calls.append(len(rows))
        if len(calls) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(ItemsWriter, "__call__", write_then_stop)


def test_resume_without_a_judge_keeps_the_finished_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The defect: --resume emptied items.jsonl and started from zero (5,888 of 20,000 items lost).
    path = records_file(tmp_path, BIG)
    reference = tmp_path / "reference"
    assert cli.main([*run_args(path, reference), "--limit", str(BIG)]) == 0
    capsys.readouterr()

    out = tmp_path / "out"
    interrupt_after_first_batch(monkeypatch)
    assert cli.main([*run_args(path, out), "--limit", str(BIG)]) == 130
    assert "--resume" in capsys.readouterr().err
    first = items(out)
    assert len(first) == 256 and manifest_status(out) == "running"
    # a kill while writing leaves a torn last line: it is cut, the complete rows are kept
    with (out / "items.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"id": "q9", "scor')
    monkeypatch.undo()

    assert cli.main([*run_args(path, out), "--limit", str(BIG)]) == 2
    assert "holds an interrupted run: pass --resume" in capsys.readouterr().err
    assert cli.main([*run_args(path, out), "--limit", str(BIG), "--resume"]) == 0
    assert f"resuming: {len(first)} finished item(s) kept" in capsys.readouterr().err
    assert items(out)[: len(first)] == first
    assert items(out) == items(reference)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["summaries"] == json.loads((reference / "summary.json").read_text(encoding="utf-8"))["summaries"]
    assert manifest_status(out) == "finished"


def test_resume_refuses_other_settings_or_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = records_file(tmp_path, BIG)
    out = tmp_path / "out"
    interrupt_after_first_batch(monkeypatch)
    assert cli.main(run_args(path, out, "--tau-sim", "0.7")) == 130
    monkeypatch.undo()
    kept = (out / "items.jsonl").read_bytes()
    assert cli.main([*run_args(path, out), "--resume"]) == 2
    assert "had other settings (tau_sim); rerun it" in capsys.readouterr().err
    path.write_text(path.read_text(encoding="utf-8").replace("question 3?", "question three?"), encoding="utf-8")
    assert cli.main([*run_args(path, out, "--tau-sim", "0.7"), "--resume"]) == 2
    assert "other input_sha256" in capsys.readouterr().err
    assert (out / "items.jsonl").read_bytes() == kept


def test_resume_with_nothing_to_resume_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*run_args(records_file(tmp_path), tmp_path / "out"), "--resume"]) == 2
    assert "holds no interrupted run" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_out_that_cannot_be_a_folder_is_refused_before_scoring(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = records_file(tmp_path)
    blocker = tmp_path / "taken.txt"
    blocker.write_text("not a folder", encoding="utf-8")
    out = blocker if where == "a file" else blocker / "sub" / "out"
    assert cli.main(run_args(path, out)) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    assert f"--out {out}" in captured.err and "is a file" in captured.err
    assert blocker.read_text(encoding="utf-8") == "not a folder"


def test_parquet_without_pyarrow_fails_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    out = tmp_path / "out"
    assert cli.main([*run_args(records_file(tmp_path), out), "--parquet"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'ragmeter[parquet]'" in err
    assert not out.exists()  # no run.json left at 'running', nothing scored


def test_a_bad_key_leaves_no_manifest_that_blocks_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("RAGMETER_TEST_NO_SUCH_KEY", raising=False)
    path, out = records_file(tmp_path), tmp_path / "out"
    judged = [
        *run_args(path, out),
        "--metrics",
        "judge_relevance",
        "--judge",
        "openai",
        "--judge-model",
        "m",
        "--judge-base-url",
        "http://127.0.0.1:9/v1",
        "--judge-api-key-env",
        "RAGMETER_TEST_NO_SUCH_KEY",
    ]
    assert cli.main(judged) == 2
    assert "RAGMETER_TEST_NO_SUCH_KEY" in capsys.readouterr().err
    assert not (out / "run.json").exists()
    assert cli.main(run_args(path, out)) == 0  # the next run is not refused


def test_a_stopped_run_without_a_finished_item_does_not_block_the_next(tmp_path: Path) -> None:
    path, out = records_file(tmp_path), tmp_path / "out"
    folder = RunFolder(out)
    folder.prepare({"input": str(path)}, resume=False)
    folder.start()  # marked running, then the judge failed before the first item was written
    (out / "items.jsonl").write_text("", encoding="utf-8")
    assert RunFolder(out).prepare({"input": str(path)}, resume=False) == []
    assert cli.main(run_args(path, out)) == 0


def test_a_closed_stdout_is_no_traceback_and_the_outputs_are_written(tmp_path: Path) -> None:
    path, out = records_file(tmp_path), tmp_path / "out"
    command = [sys.executable, "-m", "ragmeter.cli", *run_args(path, out)[:-2]]  # the table report
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    first_line = process.stdout.readline()
    process.stdout.close()  # as `| head -1` does
    err = process.stderr.read().decode()
    process.wait(timeout=60)
    assert first_line.startswith(b"ragmeter")
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert manifest_status(out) == "finished" and len(items(out)) == N
