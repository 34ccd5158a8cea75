"""``ragmeter run`` with an LLM judge, end to end against the loopback fake OpenAI server.

Kill and resume (a real SIGKILL: finished calls come back from the cache, none is repeated), the run
manifest's guards, a finished run re-run from its cache, ``--dry-run``'s table, and the missing --judge.

The verdicts follow judge_script's rules, so the expected counts and scores are worked out by hand from
``records(n)``, whose five shapes repeat every five records:

    shape  answer                          chunks  claims verdicts         correctness  relevance
    0      both sentences of the chunks    3       supported ×2            2            4
    1      one chunk sentence + a cafe     3       supported, unsupported  2            4
    2      "... is not free"               3       contradicted            2            4
    3      "I don't know." (abstains)      3       reference: supported    2            1
    4      equals the reference            none    (no claims call)        5            4

Calls per record: claims when it has chunks (shapes 0-3), correctness, relevance; all distinct.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragmeter import cli
from ragmeter.testing.fake_openai import FakeOpenAIServer
from ragmeter.testing.scripted_judge import records, respond

N_RECORDS = 60
# 60 correctness + 60 relevance + 48 claims (the 12 records of shape 4 have no chunks)
REF_CALLS = 60 + 60 + 48
SUBPROCESS_TIMEOUT = 120


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run_args(server: FakeOpenAIServer, jsonl: Path, out: Path, *extra: str, metrics: str = "judged") -> list[str]:
    return [
        "run",
        str(jsonl),
        "--metrics",
        metrics,
        "--judge",
        "openai",
        "--judge-model",
        "fake-judge",
        "--judge-base-url",
        server.base_url,
        "--judge-api-key-env",
        "",
        "--judge-concurrency",
        "2",
        "--out",
        str(out),
        "--n-resamples",
        "200",
        "--no-progress",
        *extra,
    ]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragmeter.cli", *args]


def run_subprocess(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def scores_by_id(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    by_id = {row["id"]: row["scores"] for row in rows}
    assert len(by_id) == len(rows)
    return by_id


def status(out: Path) -> str:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))["status"]


def set_status(out: Path, value: str) -> None:
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    (out / "run.json").write_text(json.dumps({**manifest, "status": value}), encoding="utf-8")


def cache_rows(out: Path) -> int:
    db = sqlite3.connect(out / "judge-cache.sqlite")
    try:
        return db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    finally:
        db.close()


def settle(server: FakeOpenAIServer) -> int:
    """The server's request count once it has stopped growing (requests a killed client sent just before
    dying may still be read off their sockets)."""
    count = len(server.requests)
    while True:
        time.sleep(0.2)
        if len(server.requests) == count:
            return count
        count = len(server.requests)


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond, latency_s=0.05) as fake:
        yield fake


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("judge-cli") / "records.jsonl", records(N_RECORDS))


@pytest.fixture(scope="module")
def reference(server, data) -> tuple[Path, int]:
    """An uninterrupted run of the 60 records; its folder and the requests it made."""
    out = data.parent / "out_ref"
    start = len(server.requests)
    done = run_subprocess(run_args(server, data, out))
    assert done.returncode == 0, done.stderr
    return out, settle(server) - start


def test_reference_run_makes_each_call_once_with_the_scores_worked_out_by_hand(reference):
    out, requests = reference
    assert requests == REF_CALLS
    judging = summary(out)["judging"]
    assert judging["totals"]["calls"] == REF_CALLS
    assert judging["totals"]["requests"] == REF_CALLS
    assert judging["totals"]["failures"] == 0
    assert {name: p["calls"] for name, p in judging["by_prompt"].items()} == {
        "claims": 48,
        "correctness": 60,
        "relevance": 60,
    }
    means = {s["metric"]: s for s in summary(out)["summaries"] if s["statistic"] == "mean"}
    assert means["judge_correctness"]["value"] == pytest.approx((4 * 2 + 5) / 5)
    assert means["judge_relevance"]["value"] == pytest.approx((4 * 4 + 1) / 5)
    assert means["judge_faithfulness"]["value"] == pytest.approx((1 + 0.5 + 0 + 1 + 1) / 5)
    assert means["judge_precision"]["value"] == pytest.approx((2 / 3 + 1 / 3 + 0 + 1 / 3) / 4)
    assert (means["judge_precision"]["n"], means["judge_precision"]["n_undefined"]) == (48, 12)
    assert status(out) == "finished"
    assert cache_rows(out) == REF_CALLS


def test_killed_run_resumes_without_repeating_a_finished_call(server, data, reference, tmp_path):
    out_ref, ref_calls = reference
    out = tmp_path / "out_a"
    args = run_args(server, data, out)
    start = len(server.requests)
    kill_after(args, server, int(0.4 * ref_calls), tmp_path / "killed.log")
    assert status(out) == "running"
    finished = cache_rows(out)
    before = settle(server)
    print("KILL", finished, before - start, ref_calls)
    assert 0 < finished <= before - start < ref_calls
    kept = (out / "items.jsonl").read_bytes().count(b"\n")  # items written before the kill

    done = run_subprocess([*args, "--resume"])
    assert done.returncode == 0, done.stderr
    assert f"resuming: {kept} finished item(s) kept" in done.stderr
    assert settle(server) - before == ref_calls - finished

    # The kept items are not judged again; the others' calls come from the cache where they were made.
    calls_left = sum(2 + (i % 5 != 4) for i in range(kept, N_RECORDS))  # see the table above
    resumed = summary(out)
    assert resumed["judging"]["totals"]["calls"] == calls_left
    assert resumed["judging"]["totals"]["requests"] == ref_calls - finished
    assert resumed["judging"]["totals"]["cached"] == calls_left - (ref_calls - finished)
    reference_summaries = summary(out_ref)["summaries"]
    key = ("metric", "statistic", "value", "n", "n_undefined")
    assert [[s[k] for k in key] for s in resumed["summaries"]] == [[s[k] for k in key] for s in reference_summaries]
    assert resumed["summaries"] == reference_summaries  # intervals too: same scores, same seed
    resumed_scores = scores_by_id(out)
    assert len(resumed_scores) == N_RECORDS
    assert resumed_scores == scores_by_id(out_ref)
    assert status(out) == "finished"
    assert cache_rows(out) == ref_calls


def kill_after(args: list[str], server: FakeOpenAIServer, requests: int, log: Path) -> None:
    """Run ``args`` in a subprocess and SIGKILL it once the server has seen ``requests`` more requests."""
    start = len(server.requests)
    with log.open("w") as handle:
        proc = subprocess.Popen(command(*args), stdout=handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + SUBPROCESS_TIMEOUT
        try:
            while len(server.requests) - start < requests:
                assert proc.poll() is None, f"the run ended before it was killed: {proc.returncode}"
                assert time.monotonic() < deadline, "the run made too few requests in time"
                time.sleep(0.01)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("source", ["judge", "claims"])
def test_a_killed_claim_level_run_resumes_without_repeating_a_call(server, tmp_path, source):
    """The claim-level family's calls come in rounds where the judge writes the nuggets (the question's nuggets, or
    the reference's claims, and the answer's claims; then the grades that need the nuggets): a run killed between
    them goes on from its cache and gives the uninterrupted run's figures."""
    data = write_jsonl(tmp_path / "records.jsonl", records(20))
    start = len(server.requests)
    judge_writes = ["--nugget-source", source]
    reference = run_subprocess([*run_args(server, data, tmp_path / "ref", metrics="claim_level"), *judge_writes])
    assert reference.returncode == 0, reference.stderr
    ref_calls = settle(server) - start
    # per record its question's nuggets (or its reference's claims) and its grades; the answer's claims, but not for
    # the 4 that abstain
    assert ref_calls == 20 + 20 + 16
    out = tmp_path / "killed"
    args = [*run_args(server, data, out, metrics="claim_level"), *judge_writes]
    kill_after(args, server, int(0.75 * ref_calls), tmp_path / "killed.log")  # in the second batch of items
    finished = cache_rows(out)
    before = settle(server)
    assert 0 < finished < ref_calls
    done = run_subprocess([*args, "--resume"])
    assert done.returncode == 0, done.stderr
    assert settle(server) - before == ref_calls - finished  # no finished call made again
    assert summary(out)["summaries"] == summary(tmp_path / "ref")["summaries"]
    assert scores_by_id(out) == scores_by_id(tmp_path / "ref")


def test_the_manifest_guards_resume(server, data, reference, tmp_path, capsys):
    out_ref, _ = reference
    out = tmp_path / "out_a"
    shutil.copytree(out_ref, out)
    set_status(out, "running")
    manifest = (out / "run.json").read_text(encoding="utf-8")
    start = len(server.requests)

    assert cli.main(run_args(server, data, out)) == 2
    err = capsys.readouterr().err
    assert "interrupted run" in err and "--resume" in err
    assert (out / "run.json").read_text(encoding="utf-8") == manifest

    assert cli.main([*run_args(server, data, out), "--resume", "--metrics", "judge_correctness"]) == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "other metrics;" in err  # names what changed, and only that
    assert (out / "run.json").read_text(encoding="utf-8") == manifest

    assert cli.main([*run_args(server, data, out), "--resume", "--judge-claims", "split"]) == 2
    assert "other judge;" in capsys.readouterr().err  # its verdicts would differ from the finished items'

    set_status(out, "finished")
    assert cli.main([*run_args(server, data, out), "--resume"]) == 2
    assert "holds a finished run, nothing to resume: leave --resume out and add --overwrite" in capsys.readouterr().err
    assert status(out) == "finished"

    fresh = tmp_path / "fresh"
    assert cli.main([*run_args(server, data, fresh), "--resume"]) == 2
    assert "no interrupted run" in capsys.readouterr().err
    assert not (fresh / "run.json").exists()
    assert len(server.requests) == start


def test_rerunning_a_finished_run_takes_every_verdict_from_the_cache(server, data, reference, tmp_path, capsys):
    out_ref, ref_calls = reference
    out = tmp_path / "out"
    shutil.copytree(out_ref, out)
    start = len(server.requests)
    assert cli.main(run_args(server, data, out)) == 2  # a finished run is replaced only when asked to
    assert f"{out} holds a finished run" in capsys.readouterr().err
    assert cli.main([*run_args(server, data, out), "--overwrite"]) == 0
    capsys.readouterr()
    assert len(server.requests) == start
    again = summary(out)
    assert again["judging"]["totals"]["cached"] == ref_calls
    assert again["judging"]["totals"]["requests"] == 0
    assert again["summaries"] == summary(out_ref)["summaries"]
    assert scores_by_id(out) == scores_by_id(out_ref)
    assert status(out) == "finished"


def test_the_shared_layout_gives_the_scores_of_separate_calls_from_one_item_prefix(server, data, tmp_path, capsys):
    """--judge-layout shared: the scripted verdicts follow the same rules, so every score equals the calls
    layout's; each record's calls start with one system message and the record's item, the verdicts come
    without a reason, and a run folder made in one layout is not resumed in the other."""
    split = ["--judge-claims", "split"]
    runs = {}
    for layout in ("calls", "shared"):
        start = len(server.requests)
        assert cli.main([*run_args(server, data, tmp_path / layout), *split, "--judge-layout", layout]) == 0
        runs[layout] = server.requests[start : settle(server)]
    capsys.readouterr()
    assert scores_by_id(tmp_path / "shared") == scores_by_id(tmp_path / "calls")
    assert len(runs["shared"]) == len(runs["calls"]) == REF_CALLS
    systems = {body["messages"][0]["content"] for body in runs["shared"]}
    assert len(systems) == 1 and "TASK correctness" in systems.pop()
    by_item: dict[str, set[str]] = {}
    for body in runs["shared"]:
        user = body["messages"][1]["content"]
        by_item.setdefault(user.split("</question>")[0], set()).add(user[: user.rindex("</reference>")])
        assert "reason" not in body["response_format"]["json_schema"]["schema"]["properties"]
    assert len(by_item) == N_RECORDS and all(len(starts) == 1 for starts in by_item.values())
    assert "layout=shared" in json.loads((tmp_path / "shared" / "run.json").read_text(encoding="utf-8"))["judge"]
    set_status(tmp_path / "shared", "running")
    assert cli.main([*run_args(server, data, tmp_path / "shared"), *split, "--resume"]) == 2
    assert "other judge;" in capsys.readouterr().err


def plan_rows(printed: str) -> dict[str, list[int]]:
    """The dry-run table's rows: prompt → [calls, cached, to make, prompt tok, completion tok]."""
    rows = {}
    for line in printed.splitlines():
        fields = line.split()
        if len(fields) == 6 and fields[0] in ("claims", "claim_split", "correctness", "relevance", "total"):
            rows[fields[0]] = [int(f) for f in fields[1:]]
    return rows


def test_a_judge_asked_to_split_only_makes_claim_split_calls(server, tmp_path, capsys):
    jsonl = write_jsonl(tmp_path / "ten.jsonl", records(10))
    assert cli.main(run_args(server, jsonl, tmp_path / "out", "--dry-run", "--judge-claims", "split")) == 0
    rows = plan_rows(capsys.readouterr().out)
    assert {name: row[:3] for name, row in rows.items()} == {
        "claim_split": [8, 0, 8],
        "correctness": [10, 0, 10],
        "relevance": [10, 0, 10],
        "total": [28, 0, 28],
    }


def test_dry_run_counts_the_calls_and_calls_nothing(server, tmp_path, capsys):
    jsonl = write_jsonl(tmp_path / "ten.jsonl", records(10))
    fresh = tmp_path / "fresh"
    start = len(server.requests)
    assert cli.main(run_args(server, jsonl, fresh, "--dry-run")) == 0
    printed = capsys.readouterr().out
    assert len(server.requests) == start
    assert not fresh.exists()
    assert "10 items" in printed
    assert "Cost" not in printed
    fresh_rows = plan_rows(printed)
    # records with chunks: shapes 0-3, twice each
    assert {name: row[:3] for name, row in fresh_rows.items()} == {
        "claims": [8, 0, 8],
        "correctness": [10, 0, 10],
        "relevance": [10, 0, 10],
        "total": [28, 0, 28],
    }

    out = tmp_path / "out"
    assert cli.main(run_args(server, jsonl, out)) == 0
    capsys.readouterr()
    sent = server.requests[start:]
    assert len(sent) == 28
    # the estimate, from what the run really sent: characters / 4 + 4 per message, and each call's token limit
    expected: dict[str, list[int]] = {}
    for body in sent:
        tokens = expected.setdefault(body["response_format"]["json_schema"]["name"], [0, 0])
        tokens[0] += sum(len(m["content"]) // 4 + 4 for m in body["messages"])
        tokens[1] += body["max_tokens"]
    assert {name: row[3:] for name, row in fresh_rows.items() if name != "total"} == expected
    assert fresh_rows["total"][3:] == [sum(t[0] for t in expected.values()), sum(t[1] for t in expected.values())]

    files = {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith("judge-cache")}
    assert cli.main(run_args(server, jsonl, out, "--dry-run")) == 0
    cached_rows = plan_rows(capsys.readouterr().out)
    assert cached_rows == {
        "claims": [8, 8, 0, 0, 0],
        "correctness": [10, 10, 0, 0, 0],
        "relevance": [10, 10, 0, 0, 0],
        "total": [28, 28, 0, 0, 0],
    }
    assert len(server.requests) == start + 28
    assert {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith("judge-cache")} == files

    assert cli.main(run_args(server, jsonl, fresh, "--dry-run", "--price-prompt", "1", "--price-completion", "2")) == 0
    printed = capsys.readouterr().out
    prompt_tokens, completion_tokens = fresh_rows["total"][3:]
    cost = (prompt_tokens * 1 + completion_tokens * 2) / 1e6
    assert f"Cost at most ≈ {cost:.4f} at 1 / 2 per million prompt / completion tokens" in printed
    assert not fresh.exists()
    assert len(server.requests) == start + 28


@pytest.mark.parametrize("metrics", ["judged", "exact_match,judge_relevance"])
def test_judged_metrics_without_a_judge_stop_before_the_file_is_read(metrics, tmp_path, capsys):
    missing = tmp_path / "no-such-file.jsonl"
    out = tmp_path / "out"
    assert cli.main(["run", str(missing), "--metrics", metrics, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--judge" in err
    assert "no-such-file" not in err
    assert not out.exists()
