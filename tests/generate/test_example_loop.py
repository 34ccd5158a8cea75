"""``examples/generate_and_compare/loop.py`` end to end, its model an OpenAI-compatible server on loopback (the
scripted judge for ragmeter's calls, a cited sentence of the first passage for the example's answers): a test set
generated from the demo's documents, answered by BM25 at two depths, scored, and compared. What is asserted holds
whatever the model writes: each setting's chunks are its BM25 depth, the deeper list holds the shallower one, and
each item's recall@4 is its qrels' share among its chunks, counted here from the files. With the packaged model
(the example's default, about two minutes on 2 cores) the same code runs: only the server differs, and the packaged
judge's own verdicts are tested in ``tests/judges/test_local_judge.py``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from ragmeter.testing import FakeOpenAIServer
from ragmeter.testing.scripted_judge import respond

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "generate_and_compare" / "loop.py"


@pytest.fixture(scope="module", autouse=True)
def needs(extra_module: Callable[[str, str], ModuleType]) -> None:
    extra_module("bm25s", "test")


def model(body: dict) -> str:
    """ragmeter's calls (a reply schema): the scripted judge's verdict; the example's answer call: the first
    passage's first sentence, citing it."""
    if "response_format" in body:
        return respond(body)
    passage = re.search(r"^\[([^\]]+)\] ([^.\n]*\.)", body["messages"][-1]["content"], re.MULTILINE)
    assert passage is not None, body["messages"][-1]["content"][:500]
    return f"{passage.group(2)} [CIT:{passage.group(1)}]"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_the_loop_generates_answers_scores_and_compares(tmp_path: Path) -> None:
    with FakeOpenAIServer(model) as server:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), str(tmp_path), "--n", "3", "--base-url", server.base_url, "--model", "m"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    testset = _rows(tmp_path / "testset.jsonl")
    assert 1 <= len(testset) <= 3
    top1, top4 = (_rows(tmp_path / f"answers-bm25-top{k}.jsonl") for k in (1, 4))
    assert [r["id"] for r in top1] == [r["id"] for r in top4] == [r["id"] for r in testset]
    chunk_ids = {json.loads(line)["id"] for line in (tmp_path / "demo" / "demo-chunks.jsonl").open(encoding="utf-8")}
    for shallow, deep in zip(top1, top4, strict=True):
        assert len(shallow["contexts"]) == 1 and len(deep["contexts"]) == 4
        assert shallow["contexts"][0] == deep["contexts"][0]  # BM25's first is first at both depths
        assert {c["doc_id"] for c in deep["contexts"]} <= chunk_ids and deep["answer"] and deep["latency_ms"] > 0
    for name, answered in (("bm25-top1", top1), ("bm25-top4", top4)):
        items = {row["id"]: row for row in _rows(tmp_path / "runs" / name / "items.jsonl")}
        for record in answered:
            relevant = {doc for doc, grade in record.get("qrels", {}).items() if grade >= 1}
            score = items[record["id"]]["scores"]["recall@4"]
            if relevant:
                assert score == pytest.approx(len(relevant & {c["doc_id"] for c in record["contexts"]}) / len(relevant))
            else:  # an unanswerable question: no qrels
                assert score is None and record["answerability"] == "UNANSWERABLE"
    assert "bm25-top4 (B) against bm25-top1 (A)" in done.stdout and "recall@4" in done.stdout
