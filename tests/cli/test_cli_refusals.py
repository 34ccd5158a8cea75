"""What a new user hit: the run folder's own files as input, a streamed HTML page, a resumed run with a bad
line, options that do nothing, a step with nothing to do, and Ctrl-C while the command starts. Each refusal
exits 2 with one message that names the flag or the file, and changes no file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import records_file, run_args

from ragmeter.cli import commands, main
from ragmeter.cli import run as run_command


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["items.jsonl", "summary.json", "run.json"])
def test_an_input_that_is_the_run_folders_own_file_is_refused(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(run_args(records_file(tmp_path), out)) == 0
    before = files(tmp_path)
    for extra in ([], ["--overwrite"], ["--resume"]):
        assert main(run_args(out / name, out, *extra)) == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"error: the input {out / name} is the run folder's own {name}, which a run in --out {out} writes: "
            "copy it elsewhere, or choose another --out"
        )
    assert files(tmp_path) == before


def test_compare_never_writes_its_html_over_a_runs_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = records_file(tmp_path)
    for out in ("a", "b"):
        assert main(run_args(data, tmp_path / out)) == 0
    before = files(tmp_path)
    assert (
        main(
            [
                "compare",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                "--html",
                str(tmp_path / "a" / "summary.json"),
                "--overwrite",
            ]
        )
        == 2
    )
    assert "is an input of this command" in capsys.readouterr().err
    assert files(tmp_path) == before


def test_the_html_page_streams_to_stdout_whatever_it_is(tmp_path: Path) -> None:
    data = records_file(tmp_path)
    command = [sys.executable, "-m", "ragmeter.cli", *run_args(data, tmp_path / "out")[:-2], "--html", "/dev/stdout"]
    piped = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith("<!DOCTYPE html>") and piped.stdout.rstrip().endswith("</html>")
    assert "Per-item scores" in piped.stderr
    with (tmp_path / "page.txt").open("w") as redirected:  # a shell's `> page.txt`
        done = subprocess.run(
            [*command[:-2], "--html", "/dev/stdout", "--out", str(tmp_path / "out2")],
            stdout=redirected,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "page.txt").read_text(encoding="utf-8")
    # the page is all that stdout carries; the report went to stderr
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>") and "Primary" in done.stderr


def test_resume_says_which_line_was_bad_and_how_many_rows_it_drops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = records_file(tmp_path, 12), tmp_path / "out"
    assert main(run_args(data, out)) == 0
    lines = (out / "items.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "items.jsonl").write_text("".join(lines[:4]) + "GARBAGE\n" + "".join(lines[5:]), encoding="utf-8")
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    (out / "run.json").write_text(json.dumps({**manifest, "status": "running"}), encoding="utf-8")
    assert main(run_args(data, out, "--resume")) == 0
    err = capsys.readouterr().err
    assert (
        f"warning: line 5 of {out / 'items.jsonl'} is not a complete JSON row: the 4 row(s) before it are "
        "kept, it and the 7 line(s) after it are dropped and scored again"
    ) in err
    assert "resuming: 4 finished item(s) kept, 8 to score" in err
    rows = [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in rows] == [f"q{i}" for i in range(12)]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "{data}", "--ray-address", "auto"], "--ray-address does nothing without --engine ray: leave it out"),
        (["run", "{data}", "--workers", "2"], "--workers does nothing without --engine ray: leave it out"),
        (
            ["run", "{data}", "--judge-model", "gpt-4o-mini"],
            "--judge-model does nothing without --judge: leave it out, or add --judge",
        ),
        (
            ["run", "{data}", "--judge-cache", "c.sqlite"],
            "--judge-cache does nothing without --judge: leave it out, or add --judge",
        ),
        (
            [
                "mtrag",
                "--step",
                "algorithmic",
                "-i",
                "{data}",
                "-o",
                "{tmp}/o.jsonl",
                "--judge-base-url",
                "http://h/v1",
            ],
            "--judge-base-url does nothing without --judge: leave it out, or add --judge",
        ),
        (
            ["calibrate-tau", "{data}", "--precision", "1.5"],
            "--precision 1.5: a precision lies in (0, 1]; give e.g. 0.9",
        ),
        (
            ["run", "{data}", "--resume", "--overwrite"],
            "--resume goes on with the run in --out, --overwrite replaces it: give one of them",
        ),
        (
            ["run", "{data}", "--rb-llm-unparsed", "0.5"],
            "--rb-llm-unparsed does nothing without --judge: leave it out, or add --judge",
        ),
        (["compare", "{data}", "{data}", "--alpha", "0.01"], "--alpha does nothing without --fail-on: leave it out"),
        (
            ["run", "{data}", "--metrics", "lexical", "--correct", "token_f1:2"],
            (
                "--correct token_f1:2: token_f1 lies in [0, 1], so no item would be on one side of it: "
                "give a value in that range"
            ),
        ),
        (
            ["labels", "template", "{data}", "-o", "{tmp}/t.csv", "--seed", "3"],
            "--seed does nothing without --sample: leave it out",
        ),
    ],
)
def test_an_option_that_does_nothing_is_an_error_naming_it(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data = records_file(tmp_path)
    os.chdir(tmp_path)
    before = files(tmp_path)
    assert main([a.format(data=data, tmp=tmp_path) for a in argv]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {message}"]
    assert files(tmp_path) == before


def test_idk_condition_with_nothing_to_condition_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw.jsonl"
    row = {
        "task_id": "c1<::>1",
        "conversation_id": "c1",
        "model_id": "m",
        "input": [{"speaker": "user", "text": "q?"}],
        "contexts": [{"document_id": "d", "text": "a passage"}],
        "targets": [{"text": "the reference"}],
        "predictions": [{"text": "An answer."}],
        "answerability": ["ANSWERABLE"],
    }
    raw.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert main(["mtrag", "--step", "idk_condition", "-i", str(raw), "-o", str(tmp_path / "out.jsonl")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        (
            f"error: step 'idk_condition' conditions RB_agg, RB_llm, RL_F on the IDK verdict, and no record of {raw} "
            "holds any of them: run --step algorithmic (and idk, ragas, radbench with a judge) first, or --step all"
        )
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw.jsonl"]


@pytest.mark.parametrize("place", ["/proc/version", "/proc/ragmeter.html"])
def test_an_unwritable_output_names_the_users_path_and_exits_2(
    tmp_path: Path, place: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*run_args(records_file(tmp_path), tmp_path / "out"), "--html", place, "--overwrite"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        (
            f"error: --html {place} cannot be written: /proc does not take new files (No such file or directory); "
            "choose a folder you can write to"
        )
    ]
    assert not (tmp_path / "out").exists()


#: What the installed ``ragmeter`` script runs (pyproject's [project.scripts]).
CONSOLE_SCRIPT = "import sys; from ragmeter._entry import main; sys.argv[0] = 'ragmeter'; sys.exit(main())"


# python -m runs the interpreter's module machinery first (runpy): the delays start past it
@pytest.mark.parametrize(
    ("launcher", "delays"),
    [(["-c", CONSOLE_SCRIPT], (0.05, 0.15, 0.3, 0.5, 0.8)), (["-m", "ragmeter.cli"], (0.3, 0.5, 0.8))],
    ids=["script", "python -m"],
)
def test_ctrl_c_while_the_command_starts_prints_no_traceback(
    tmp_path: Path, launcher: list[str], delays: tuple[float, ...]
) -> None:
    data = records_file(tmp_path)
    for delay in delays:
        process = subprocess.Popen(
            [sys.executable, *launcher, "labels", "template", str(data), "-o", str(tmp_path / f"{delay}.csv")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (delay, err)
        assert process.returncode in (0, 130, -signal.SIGINT), (delay, process.returncode, err)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's data, with runs of its two variants in ``a`` and ``b``."""
    root = tmp_path_factory.mktemp("demo-runs")
    assert main(["demo", str(root / "demo")]) == 0
    for out, data in (("a", "demo.jsonl"), ("b", "demo-gate.jsonl")):
        assert (
            main(
                [
                    "run",
                    str(root / "demo" / data),
                    "--out",
                    str(root / out),
                    "--embedder",
                    "hashing",
                    "--no-progress",
                    "--n-resamples",
                    "200",
                    "--format",
                    "json",
                ]
            )
            == 0
        )
    return root


@pytest.mark.parametrize("command", ["compare", "estimate", "agree"])
def test_a_page_on_redirected_stdout_is_all_that_stdout_carries(demo_runs: Path, tmp_path: Path, command: str) -> None:
    labels = [str(demo_runs / "demo" / "demo-labels-ana.csv"), "--metric", "overlap", "--label", "support_present"]
    argv = {
        "compare": [str(demo_runs / "a"), str(demo_runs / "b"), "--n-resamples", "200"],
        "estimate": [str(demo_runs / "a"), *labels],
        "agree": [str(demo_runs / "a" / "items.jsonl"), *labels, "--n-resamples", "200"],
    }[command]
    with (tmp_path / "page.html").open("w") as redirected:  # a shell's `> page.html`
        done = subprocess.run(
            [sys.executable, "-m", "ragmeter.cli", command, *argv, "--html", "/dev/stdout"],
            stdout=redirected,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<!DOCTYPE html>") == 1 and page.count("</html>") == 1
    report_line = {"compare": "token_f1", "estimate": "PPI++", "agree": "overlap against human support_present"}[
        command
    ]
    assert report_line in done.stderr  # the text report went to stderr


@pytest.mark.parametrize("flag", ["--html", "--junit", "--summary-file", "--out", "--qrels", "--idk-patterns"])
def test_an_empty_path_is_an_error_not_the_working_directory(
    tmp_path: Path, flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main([*run_args(records_file(tmp_path), tmp_path / "out"), "--require", "token_f1>=0", flag, ""])
    assert exit_.value.code == 2
    assert f"{flag}: an empty path (an unset variable?): give a file or folder name" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl"]


def test_metrics_naming_no_metric_is_an_error_not_the_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", str(records_file(tmp_path)), "--out", str(tmp_path / "out"), "--no-progress"]
    for given in ("", " , "):
        assert main([*argv, "--metrics", given]) == 2
        assert capsys.readouterr().err.splitlines() == [
            (
                f"error: --metrics {given!r} names no metric: give metric or family names (see 'ragmeter metrics'), "
                "or leave --metrics out for the default ones"
            )
        ]
    assert not (tmp_path / "out").exists()


def test_the_run_folder_and_its_own_files_are_no_output_of_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = records_file(tmp_path), tmp_path / "out"
    assert main(run_args(data, out)) == 0
    before = files(tmp_path)
    for flag, name in (
        ("--summary-file", "items.jsonl"),
        ("--summary-file", "summary.json"),
        ("--html", "run.json"),
        ("--junit", "judge-cache.sqlite"),
    ):
        assert main([*run_args(data, out, "--overwrite", "--require", "token_f1>=0"), flag, str(out / name)]) == 2
        assert capsys.readouterr().err.splitlines() == [
            (
                f"error: {flag} {out / name} is the run folder's own {name} (--out {out}): give this output a file of "
                "its own"
            )
        ]
    assert (
        main(
            [
                *run_args(data, tmp_path / "new", "--require", "token_f1>=0"),
                "--junit",
                str(tmp_path / "new"),
                "--html",
                str(tmp_path / "page.html"),
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.splitlines() == [
        (
            f"error: --junit {tmp_path / 'new'} is the run folder (--out {tmp_path / 'new'}): "
            "give this output a file of its own"
        )
    ]
    assert (
        main(
            [
                *run_args(data, tmp_path / "new", "--require", "token_f1>=0"),
                "--html",
                str(tmp_path / "r"),
                "--junit",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.splitlines() == [
        f"error: --junit {tmp_path / 'r'} is the output of --html {tmp_path / 'r'}: give this output a file of its own"
    ]
    assert files(tmp_path) == before


def test_an_interrupted_run_says_what_it_kept(tmp_path: Path) -> None:
    data, out = records_file(tmp_path), tmp_path / "out"
    args = commands._parser().parse_args(run_args(data, out))
    assert run_command._after_interrupt(args) == (
        "no item was finished: nothing was kept, and the same command starts afresh"
    )
    assert main(run_args(data, out)) == 0
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    (out / "run.json").write_text(json.dumps({**manifest, "status": "running"}), encoding="utf-8")
    assert run_command._after_interrupt(args) == (
        f"the items finished so far are kept in {out / 'items.jsonl'}; rerun the same command with --resume to "
        "score only the rest"
    )
    judged = commands._parser().parse_args(
        [*run_args(data, tmp_path / "judged"), "--judge", "openai", "--judge-model", "m"]
    )
    (tmp_path / "judged").mkdir()
    (tmp_path / "judged" / "judge-cache.sqlite").write_bytes(b"SQLite format 3\x00")
    assert run_command._after_interrupt(judged) == (
        f"no item was finished, so there is nothing to --resume; the judge's verdicts so far are kept in "
        f"{tmp_path / 'judged' / 'judge-cache.sqlite'}: rerun the same command (without --resume) and they are "
        "reused, not asked again"
    )


def test_a_committed_baseline_finds_its_input_from_another_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    rows = [
        {
            "id": f"q{i}",
            "question": "q?",
            "answer": "a",
            "references": ["a"] if i % 2 else [],
            "answerability": "answerable" if i % 2 else "unanswerable",
        }
        for i in range(6)
    ]
    (repo / "data" / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.chdir(repo)
    for out in ("runs/a", "runs/b"):
        assert (
            main(
                [
                    "run",
                    "data/records.jsonl",
                    "--metrics",
                    "lexical",
                    "--out",
                    out,
                    "--no-progress",
                    "--n-resamples",
                    "200",
                    "--format",
                    "json",
                ]
            )
            == 0
        )
    assert json.loads((repo / "runs" / "a" / "run.json").read_text())["input_from_run"] == "../../data/records.jsonl"
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)  # the runs, committed, compared from elsewhere: data/records.jsonl is not here
    assert main(["compare", "repo/runs/a", "repo/runs/b", "--n-resamples", "200", "--format", "json"]) == 0
    groups = {(g["field"], g["value"]) for g in json.loads(capsys.readouterr().out)[0]["groups"]}
    assert {("answerability", "ANSWERABLE"), ("answerability", "UNANSWERABLE")} <= groups


def test_an_interrupted_mtrag_step_says_what_it_kept(tmp_path: Path) -> None:
    out = tmp_path / "scored.jsonl"
    args = commands._parser().parse_args(
        ["mtrag", "--step", "algorithmic", "-i", str(tmp_path / "in.jsonl"), "-o", str(out)]
    )
    mtrag_command = next(c for c in commands.COMMANDS if c.name == "mtrag")
    assert mtrag_command.after_interrupt(args) == (
        "no record was finished: nothing was kept, and the same command starts afresh"
    )
    (tmp_path / "scored.jsonl.partial").write_text('{"task_id": "t"}\n', encoding="utf-8")
    assert mtrag_command.after_interrupt(args) == (
        f"the records finished so far are kept in {out}.partial; the same command goes on from them"
    )


def test_a_pipe_as_records_is_refused_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "pipe")  # nothing writes to it: a reader would wait for ever
    for argv in (["run", str(tmp_path / "pipe"), "--out", str(tmp_path / "out")], ["validate", str(tmp_path / "pipe")]):
        assert main(argv) == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"error: {tmp_path / 'pipe'}: not a regular file but a pipe, a device or a socket (as /dev/stdin and a "
            "shell's <(…) give): records are read more than once, so save them to a file first"
        )
    assert not (tmp_path / "out").exists()


def test_a_negative_seed_and_an_impossible_resample_count_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = records_file(tmp_path)
    assert main(run_args(data, tmp_path / "a", "--seed", "-1")) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "error: the seed must be a whole number at least 0, got -1"
    # 10^12 resamples of 7 metrics: 50 TiB of bootstrap means, which no allocation gets
    assert main(run_args(data, tmp_path / "b", "--n-resamples", str(10**12))) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.splitlines()[-1].startswith("error: out of memory (")
    assert err.splitlines()[-1].endswith(
        "lower --n-resamples, or score fewer records at once (--limit, or the file in parts)"
    )


def test_no_command_writes_over_another_runs_own_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out = records_file(tmp_path), tmp_path / "run"
    assert main(run_args(data, out)) == 0
    (tmp_path / "people.csv").write_text("annotator,record_id,unit,helpful\nana,q0,answer,1\n", encoding="utf-8")
    before = files(tmp_path)
    for name in ("items.jsonl", "summary.json", "run.json"):
        assert (
            main(["labels", "merge", str(data), str(tmp_path / "people.csv"), "-o", str(out / name), "--overwrite"])
            == 2
        )
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"error: -o {out / name} is the run folder {out}'s own {name}: give a file outside the run's names "
            "(--overwrite never replaces a run's own files)"
        )
    assert files(tmp_path) == before


def test_a_demo_folder_that_is_a_dangling_symlink_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    assert main(["demo", str(tmp_path / "link")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        (
            f"error: {tmp_path / 'link'} is a symlink to {tmp_path / 'nowhere'}, which is not there: give a folder to "
            "copy the demo into (it is created if missing)"
        )
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


def test_an_mtrag_step_with_a_missing_baseline_file_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {
            "task_id": "c0<::>1",
            "conversation_id": "c0",
            "input": [{"speaker": "user", "text": "q?"}],
            "contexts": [{"document_id": "d", "text": "a passage"}],
            "targets": [{"text": "the reference"}],
            "predictions": [{"text": "An answer."}],
        }
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert (
        main(
            [
                "mtrag",
                "--step",
                "algorithmic",
                "-i",
                str(tmp_path / "in.jsonl"),
                "-o",
                str(tmp_path / "out.jsonl"),
                "--bert-baseline",
                str(tmp_path / "nope.csv"),
                "--bert-layer",
                "6",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: --bert-baseline {tmp_path / 'nope.csv'}: no such file: give bert-score's baseline CSV for the "
        "model, or mtrag-deberta (MT-RAG's values)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize(
    ("flag", "allowed"),
    [
        ("--ci", "'bca', 'percentile'"),
        ("--nugget-source", "'sentences', 'claims', 'judge'"),
        ("--ndcg-gain", "'exponential', 'linear'"),
    ],
)
def test_an_unknown_choice_is_named_with_the_choices_as_typed(
    tmp_path: Path, flag: str, allowed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*run_args(records_file(tmp_path), tmp_path / "out"), flag, "other"])
    assert exit_.value.code == 2
    assert f"argument {flag}: invalid choice: 'other' (choose from {allowed})" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl"]
