"""``ragmeter generate`` end to end on the scripted judge behind a fake OpenAI endpoint: a folder of documents in, a
test set out that ``validate`` and ``run`` take unchanged, the report of what was dropped, and the files it must
never write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.cli import main
from ragmeter.testing.fake_openai import FakeOpenAIServer
from ragmeter.testing.scripted_judge import respond


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as fake:
        yield fake


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    (folder / "library.txt").write_text(
        "The Central Library opens at nine. It has three floors.\n\n"
        "Parking costs three dollars. The garage is underground.",
        "utf-8",
    )
    (folder / "museum.html").write_text(
        "<p>The museum closes at six. Entry is free.</p><p>NO QUOTE the cafe sells tea.</p>", "utf-8"
    )
    (folder / "logo.png").write_bytes(b"\x89PNG")
    return folder


def _args(server: FakeOpenAIServer, corpus: Path, output: Path, *extra: str) -> list[str]:
    return [
        "generate",
        str(corpus),
        "-o",
        str(output),
        "--n",
        "2",
        "--max-chars",
        "60",
        "--overlap",
        "0",
        "--judge",
        "openai",
        "--judge-model",
        "scripted",
        "--judge-base-url",
        server.base_url,
        "--judge-api-key-env",
        "",
        *extra,
    ]


def test_a_folder_gives_a_test_set_that_validate_and_run_take(server, tmp_path: Path, capsys) -> None:
    corpus = _corpus(tmp_path / "docs")
    output = tmp_path / "testset.jsonl"
    assert main(_args(server, corpus, output)) == 0
    out = capsys.readouterr().out
    assert "docs: 4 chunks; 1 file(s) skipped" in out and "skipped logo.png: not a document" in out
    assert f"written: {output} (2 items)" in out
    rows = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    assert len(rows) == 2 and all(row["answer"] == "" and len(row["qrels"]) == 1 for row in rows)
    assert {row["metadata"]["question_type"] for row in rows} == {"factoid", "explanation"}
    assert main(["validate", str(output)]) == 0
    assert (
        main(
            [
                "run",
                str(output),
                "--metrics",
                "token_f1",
                "--out",
                str(tmp_path / "run"),
                "--no-progress",
                "--format",
                "json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(_args(server, corpus, output)) == 2  # an existing test set is not replaced
    assert "--overwrite" in capsys.readouterr().err


def test_unanswerable_questions_are_written_with_no_reference_and_no_qrels(server, tmp_path: Path, capsys) -> None:
    corpus = _corpus(tmp_path / "docs")
    output = tmp_path / "testset.jsonl"
    assert main(_args(server, corpus, output, "--types", "factoid,unanswerable", "--embedder", "hashing")) == 0
    rows = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    unanswerable = [row for row in rows if row["metadata"]["question_type"] == "unanswerable"]
    assert len(rows) == 2 and len(unanswerable) == 1
    assert unanswerable[0]["answerability"] == "UNANSWERABLE" and "qrels" not in unanswerable[0]
    assert "references" not in unanswerable[0] and main(["validate", str(output)]) == 0


def test_nothing_kept_writes_nothing_and_says_why(server, tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.txt").write_text("NO QUOTE the cafe sells tea.", "utf-8")
    output = tmp_path / "testset.jsonl"
    assert main(_args(server, corpus, output, "--types", "factoid")) == 1
    out = capsys.readouterr().out
    assert "dropped 1 factoid: a quote of the answer's evidence is not words of its chunks" in out
    assert "fewer than asked: 0 of 2 items kept after 1 asked" in out and "nothing written" in out
    assert not output.exists()


def test_a_corpus_file_is_never_the_output(server, tmp_path: Path, capsys) -> None:
    corpus = _corpus(tmp_path / "docs")
    before = (corpus / "library.txt").read_bytes()
    assert main(_args(server, corpus, corpus / "library.txt", "--overwrite")) == 2
    assert "input" in capsys.readouterr().err
    assert (corpus / "library.txt").read_bytes() == before


def test_a_dry_run_prices_the_writing_and_calls_nothing(server, tmp_path: Path, capsys) -> None:
    corpus = _corpus(tmp_path / "docs")
    before = len(server.requests)
    assert main(_args(server, corpus, tmp_path / "testset.jsonl", "--types", "factoid,follow_up", "--dry-run")) == 0
    out = capsys.readouterr().out
    # four chunks in two documents: the factoids take one chunk each, the follow-ups two of one document (their
    # first turn's call counted, a factoid's); two items wanted, so at most two asks of each kind
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("testset_")}
    assert rows["testset_factoid"][:2] == ["3", "0"]
    assert "Not counted: the checks of what is written" in out
    assert len(server.requests) == before and not (tmp_path / "testset.jsonl").exists()


def test_the_demo_documents_give_a_test_set_of_each_answerable_kind(server, tmp_path: Path, capsys) -> None:
    assert main(["demo", str(tmp_path / "demo")]) == 0
    output = tmp_path / "testset.jsonl"
    # MiniLM (the default for English) tells the scripted judge's "What does the text say about the X?" questions
    # apart (cosines 0.37–0.51); the hashing embedder, which counts words, finds them near-duplicates (0.78–0.90)
    assert (
        main(
            _args(
                server,
                tmp_path / "demo" / "demo-chunks.jsonl",
                output,
                "--n",
                "8",
                "--types",
                "factoid,explanation,two_chunks,follow_up",
            )
        )
        == 0
    )
    assert "demo-chunks.jsonl: 94 chunks" in capsys.readouterr().out
    rows = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    kinds = [row["metadata"]["question_type"] for row in rows]
    assert sorted(kinds) == ["explanation"] * 2 + ["factoid"] * 2 + ["follow_up"] * 2 + ["two_chunks"] * 2
    assert all(len(row["history"]) == 2 for row in rows if row["metadata"]["question_type"] == "follow_up")
    assert {qrel.rsplit("-", 1)[0] for row in rows for qrel in row.get("qrels", {})} <= {
        json.loads(line)["doc_id"] for line in (tmp_path / "demo" / "demo-chunks.jsonl").read_text("utf-8").splitlines()
    }
    assert main(["validate", str(output)]) == 0
    assert (
        main(
            [
                "run",
                str(output),
                "--metrics",
                "lexical",
                "--out",
                str(tmp_path / "run"),
                "--no-progress",
                "--format",
                "json",
            ]
        )
        == 0
    )


def test_a_killed_run_goes_on_from_its_cache_and_writes_the_uninterrupted_set(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    assert main(["demo", str(tmp_path / "demo")]) == 0
    corpus = tmp_path / "demo" / "demo-chunks.jsonl"
    with FakeOpenAIServer(respond, latency_s=0.05) as slow:
        assert main(_args(slow, corpus, tmp_path / "whole.jsonl", "--n", "8", "--no-progress")) == 0
        whole = len(slow.requests)
        killed = tmp_path / "killed.jsonl"
        command = [sys.executable, "-m", "ragmeter.cli", *_args(slow, corpus, killed, "--n", "8", "--no-progress")]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(slow.requests) < whole + 3 * whole // 4:  # in its checks
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        time.sleep(0.3)
        before = len(slow.requests)
        assert not killed.exists()  # nothing half-written
        assert main(_args(slow, corpus, killed, "--n", "8", "--no-progress")) == 0
        asked_again = len(slow.requests) - before
    assert 0 < asked_again < whole  # the answered calls came from the cache
    assert killed.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
