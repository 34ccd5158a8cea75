"""What a judged command leaves when the judge fails or its output is taken, against the loopback fake server:
a person's labels are never replaced, a run folder is left as it was when the judge refuses at the start, a
run or an annotation whose every judge call failed exits non-zero, and an address that is not one is refused
before any call."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ragmeter.cli import commands as cli
from ragmeter.judges.cache import CachedVerdict, JudgeCache
from ragmeter.testing.fake_openai import FakeOpenAIServer, HTTPFault
from ragmeter.testing.scripted_judge import records, respond

UNREACHABLE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def judge_args(base_url: str) -> list[str]:
    return [
        "--judge",
        "openai",
        "--judge-model",
        "fake-judge",
        "--judge-base-url",
        base_url,
        "--judge-api-key-env",
        "",
        "--judge-max-attempts",
        "2",
        "--judge-backoff",
        "0.01",
    ]


def run_args(data: Path, out: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "run",
        str(data),
        "--metrics",
        "judged",
        *judge_args(base_url),
        "--out",
        str(out),
        "--n-resamples",
        "200",
        "--no-progress",
        *extra,
    ]


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def refuse_key(body: dict) -> str:
    raise HTTPFault(401, "Incorrect API key provided")


def not_json(body: dict) -> str:
    return "this is not JSON"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "records.jsonl", records(5))


def test_annotate_never_replaces_a_persons_labels(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    people = tmp_path / "people.csv"
    people.write_text("annotator,record_id,helpful\nana,r0,1\n", encoding="utf-8")
    before = files(tmp_path)
    with FakeOpenAIServer(respond) as server:
        code = cli.main(
            ["labels", "annotate", str(data), "-o", str(people), "--labels", "helpful", *judge_args(server.base_url)]
        )
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: -o {people} exists: pass --overwrite to replace it, or give a new file name"
    ]
    assert server.requests == [] and files(tmp_path) == before


def test_an_annotation_that_labelled_nothing_fails_and_writes_no_labels(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "llm.csv"
    with FakeOpenAIServer(not_json) as server:
        code = cli.main(
            ["labels", "annotate", str(data), "-o", str(out), "--labels", "helpful", *judge_args(server.base_url)]
        )
    err = capsys.readouterr().err
    assert code == 1
    assert not out.exists()
    failures = [json.loads(line) for line in (tmp_path / "llm.csv.failures.jsonl").read_text().splitlines()]
    assert len(failures) == 5 and all("invalid reply" in f["reason"] for f in failures)
    assert f"error: no row was labelled: all 5 judge call(s) failed, so {out} was not written" in err


def test_a_finished_run_is_refused_and_a_failed_overwrite_leaves_it_as_it_was(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(respond) as server:
        assert cli.main(run_args(data, out, server.base_url)) == 0
        before = files(out)
        assert cli.main(run_args(data, out, server.base_url)) == 2
    assert f"error: {out} holds a finished run (of {data}): pass --overwrite" in capsys.readouterr().err
    with FakeOpenAIServer(refuse_key) as server:
        assert cli.main(run_args(data, out, server.base_url, "--overwrite", "--no-judge-cache")) == 2
    err = capsys.readouterr().err
    assert "refused" in err and f"No item was finished: {out} is left as it was." in err
    assert files(out) == before
    assert json.loads((out / "run.json").read_text())["status"] == "finished"


@pytest.mark.parametrize("judge", ["refused key", "nothing listening"])
def test_a_judge_that_fails_at_the_start_leaves_no_run_folder(
    data: Path, tmp_path: Path, judge: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new-run"
    if judge == "refused key":
        with FakeOpenAIServer(refuse_key) as server:
            assert cli.main(run_args(data, out, server.base_url)) == 2
    else:
        assert cli.main(run_args(data, out, UNREACHABLE)) == 2
    assert "No item was finished: nothing was written." in capsys.readouterr().err
    assert not out.exists()


def test_a_run_whose_every_judge_call_failed_exits_non_zero(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(not_json) as server:
        code = cli.main(run_args(data, out, server.base_url, "--format", "json"))
    captured = capsys.readouterr()
    assert code == 1
    calls = 4 * 3 + 2  # claims, correctness, relevance for the 4 records with chunks; 2 for the last
    judging = json.loads((out / "summary.json").read_text())["judging"]
    assert judging["totals"]["calls"] == judging["totals"]["failures"] == judging["failures"] == calls
    assert f"error: every one of the {calls} judge calls failed, so every judged metric is undefined" in captured.err
    assert json.loads((out / "run.json").read_text())["status"] == "finished"


@pytest.mark.parametrize("url", ["not-a-url", "localhost:8000/v1", "http:///v1"])
def test_an_address_that_is_not_one_is_refused_before_any_work(
    data: Path, tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(run_args(data, tmp_path / "out", url)) == 2
    assert capsys.readouterr().err.splitlines() == [
        (
            f"error: the judge's base URL {url!r} is not an http(s) address: give one such as http://localhost:8000/v1 "
            "(--judge-base-url)"
        )
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl"]


def test_a_judge_cache_that_is_an_input_or_no_cache_is_refused(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database", encoding="utf-8")
    before = files(tmp_path)
    for cache, message in (
        (data, "is an input of this command"),
        (notes, "exists and holds something else than this output keeps there"),
    ):
        assert cli.main(run_args(data, tmp_path / "out", UNREACHABLE, "--judge-cache", str(cache))) == 2
        assert f"error: --judge-cache {cache} {message}" in capsys.readouterr().err
    # --overwrite cannot help: a cache is used in place, never replaced, so the advice is a new name
    assert cli.main(run_args(data, tmp_path / "out", UNREACHABLE, "--judge-cache", str(notes), "--overwrite")) == 2
    assert "give a new file name" in capsys.readouterr().err
    assert files(tmp_path) == before


def _as_if_killed(out: Path, keep_rows: int) -> None:
    """Make the finished run in ``out`` look killed: ``running``, ``keep_rows`` items, and a verdict cache whose
    last verdict is still in its ``-wal`` file with the ``-shm`` beside it, as SQLite leaves them to a killed
    writer."""
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    (out / "run.json").write_text(json.dumps({**manifest, "status": "running"}), encoding="utf-8")
    rows = (out / "items.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "items.jsonl").write_text("".join(rows[:keep_rows]), encoding="utf-8")
    (out / "summary.json").unlink()
    cache = out / "judge-cache.sqlite"
    writer = sqlite3.connect(cache, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute(
        "INSERT INTO verdicts (key, judge, verdict, failure, raw, prompt_tokens, completion_tokens, "
        "created) VALUES ('late', 'fake', '1', NULL, NULL, 1, 1, 0)"
    )
    kept = {name: (out / name).read_bytes() for name in (cache.name, f"{cache.name}-wal", f"{cache.name}-shm")}
    writer.close()  # checkpoints and removes the journal files: put back what a kill leaves
    for name, content in kept.items():
        (out / name).write_bytes(content)


@pytest.mark.parametrize("extra", [[], ["--resume", "--limit", "3"]], ids=["plain rerun", "resume with other options"])
def test_a_refused_rerun_of_a_killed_run_leaves_its_verdict_cache_and_journal_as_they_were(
    data: Path, tmp_path: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(respond) as server:
        assert cli.main(run_args(data, out, server.base_url)) == 0
        _as_if_killed(out, keep_rows=2)
        before = files(out)
        assert {"judge-cache.sqlite-wal", "judge-cache.sqlite-shm"} <= set(before)
        assert cli.main(run_args(data, out, server.base_url, *extra)) == 2
    err = capsys.readouterr().err
    assert (
        "holds an interrupted run: pass --resume" in err
        if not extra
        else "the interrupted run in" in err and "had other limit" in err
    )
    assert files(out) == before


def test_resume_with_nothing_finished_says_a_plain_rerun_reuses_the_verdicts(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    cache = JudgeCache(out / "judge-cache.sqlite")
    cache.put("k", "fake", CachedVerdict(1, None, None, 1, 1))
    cache.close()
    before = files(out)
    assert cli.main(run_args(data, out, UNREACHABLE, "--resume")) == 2
    assert capsys.readouterr().err.splitlines() == [
        (
            f"error: --resume: {out} holds no interrupted run with finished items to go on from: leave --resume out to "
            f"start the run; the judge's verdicts in {out / 'judge-cache.sqlite'} are reused by a plain rerun"
        )
    ]
    assert files(out) == before
