"""``ragmeter labels annotate``: the LLM annotator end to end against the loopback fake OpenAI server (its
scripted verdicts in ``judge_script``), with every label worked out by hand, a failed call left out and
recorded, and its file merged with two human files by ``labels merge`` without a single problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter import read_records
from ragmeter.cli import main
from ragmeter.human.annotation_files import write_template
from ragmeter.testing.fake_openai import FakeOpenAIServer
from ragmeter.testing.scripted_judge import records, respond

#: By hand, per record shape (judge_script.records): answer labels, then each chunk's (relevant, sufficient,
#: misleading); chunks: "… opens at nine. Tickets …", "… closes at six.", "Parking near museum … is free."
GROUNDING = {0: (1, 0, 0), 1: (1, 1, 0), 2: (0, 0, 1), 3: (0, 0, 0), 4: (0, 1, 0)}
GENERATION = {0: (1, 1, 1, 0, 0), 1: (1, 1, 1, 0, 0), 2: (1, 1, 0, 0, 0), 3: (1, 0, 0, 1, 0), 4: (1, 1, 1, 0, 0)}
CHUNKS = [(1, 1, 0), (1, 0, 1), (1, 0, 0)]
ANSWER = ("support_present", "unsupported_claim_present", "contradicted_claim_present")
GENERATION_NAMES = ("proper_action", "response_on_topic", "helpful", "incomplete", "unsafe_content")
CHUNK_NAMES = ("topically_relevant", "evidence_sufficient", "misleading")


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond, latency_s=0.01) as fake:
        yield fake


def _data(folder: Path, *, broken: bool = False) -> Path:
    """The five record shapes of judge_script; ``broken``: and a copy of the first whose answer the scripted
    judge cannot label (its generation reply is never JSON)."""
    rows = records(5)
    extra = [dict(rows[0], id="r-broken", answer="The museum 0 opens at nine. BROKEN.")] if broken else []
    path = folder / "records.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in [*rows, *extra]), encoding="utf-8")
    return path


def _judge(server: FakeOpenAIServer) -> list[str]:
    return [
        "--judge",
        "openai",
        "--judge-model",
        "scripted",
        "--judge-base-url",
        server.base_url,
        "--judge-api-key-env",
        "",
    ]


def test_the_annotator_labels_by_the_verdicts_and_merges_with_people(
    server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _data(tmp_path)
    output = tmp_path / "llm.jsonl"
    assert main(["labels", "annotate", str(data), "-o", str(output), *_judge(server)]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    annotator = rows[0]["annotator"]
    assert annotator.startswith("llm:scripted") and f"rows labelled by {annotator}" in out
    answers = {r["record_id"]: r for r in rows if r["unit"] == "answer"}
    for shape in range(5):
        row = answers[f"r{shape}"]
        assert tuple(row[name] for name in ANSWER) == GROUNDING[shape], shape
        assert tuple(row[name] for name in GENERATION_NAMES) == GENERATION[shape], shape
        assert (row["source_cited"], row["fabricated_source"]) == (0, 0)
    chunk_rows = [r for r in rows if r["unit"] == "chunk" and r["record_id"] == "r0"]
    assert [tuple(r[name] for name in CHUNK_NAMES) for r in chunk_rows] == CHUNKS
    assert (tmp_path / "llm.jsonl.failures.jsonl").read_text(encoding="utf-8") == "" and "failed" not in err

    # two people label the same records; labels merge reads all three files without a problem and reports the
    # LLM's agreement with them label by label
    for person, flip in (("ann1", False), ("ann2", True)):
        template = tmp_path / f"{person}.jsonl"
        write_template(read_records(data), template, annotator=person)
        filled = []
        for line in template.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            twin = next(
                r
                for r in rows
                if (r["record_id"], r["unit"], r["rank"]) == (row["record_id"], row["unit"], row["rank"])
            )
            values = {k: twin[k] for k, v in row.items() if v is None}
            if flip and row["unit"] == "answer" and row["record_id"] == "r1":
                values["helpful"] = 1 - values["helpful"]
            filled.append({**row, **values})
        template.write_text("".join(json.dumps(r) + "\n" for r in filled), encoding="utf-8")
    merged = tmp_path / "merged.jsonl"
    assert (
        main(
            [
                "labels",
                "merge",
                str(data),
                str(tmp_path / "ann1.jsonl"),
                str(tmp_path / "ann2.jsonl"),
                str(output),
                "-o",
                str(merged),
                "--format",
                "json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["problems_skipped"] == 0 and sorted(report["annotators"]) == sorted(["ann1", "ann2", annotator])
    helpful = next(a for a in report["agreement"] if a["label"] == "helpful")
    # ann2 flipped helpful on r1: 4 units where the three agree, and one where 1 of its 3 pairs does
    assert (helpful["n_units"], len(helpful["annotators"])) == (5, 3)
    assert helpful["raw_agreement"] == pytest.approx((4 + 1 / 3) / 5)


def test_the_demo_annotated_merges_with_the_two_bundled_human_files(
    server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's check: annotate the demo data, then merge with two people's files, without an invalid row."""
    assert main(["demo", str(tmp_path)]) == 0
    output = tmp_path / "llm.csv"
    assert main(["labels", "annotate", str(tmp_path / "demo.jsonl"), "-o", str(output), *_judge(server)]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "labels",
                "merge",
                str(tmp_path / "demo.jsonl"),
                str(tmp_path / "demo-labels-ana.csv"),
                str(tmp_path / "demo-labels-ben.csv"),
                str(output),
                "-o",
                str(tmp_path / "merged.jsonl"),
                "--format",
                "json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["problems_skipped"] == 0 and len(report["annotators"]) == 3
    assert all(entry["n_units"] in (45, 395) for entry in report["agreement"])


def test_a_failed_call_leaves_its_rows_out_and_is_recorded(
    server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "llm.jsonl"
    assert main(["labels", "annotate", str(_data(tmp_path, broken=True)), "-o", str(output), *_judge(server)]) == 0
    err = capsys.readouterr().err
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    # its generation call failed twice (reply and repair): its answer row is left out, its chunk rows kept
    assert [r["unit"] for r in rows if r["record_id"] == "r-broken"] == ["chunk"] * 3
    failures = [
        json.loads(line) for line in (tmp_path / "llm.jsonl.failures.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [(f["record_id"], f["prompt"]) for f in failures] == [("r-broken", "generation_labels")]
    assert "invalid reply" in failures[0]["reason"] and "1 judge call(s) failed" in err


def test_a_dry_run_counts_the_calls(server, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _data(tmp_path, broken=True)
    before = len(server.requests)
    assert main(["labels", "annotate", str(data), "-o", str(tmp_path / "x.jsonl"), *_judge(server), "--dry-run"]) == 0
    out = capsys.readouterr().out
    # distinct calls: chunk labels for the 4 records with chunks (the broken copy asks r0's question of r0's
    # chunks: the same call); claims of the answers given with chunks (shapes 0, 1, 2, the broken one);
    # generation labels for all 6
    counts = {
        line.split()[0]: int(line.split()[1])
        for line in out.splitlines()
        if line.split() and line.split()[0] in ("chunk_labels", "claims", "generation_labels")
    }
    assert counts == {"chunk_labels": 4, "claims": 4, "generation_labels": 6}
    assert len(server.requests) == before and not (tmp_path / "x.jsonl").exists()


def test_an_interrupted_annotation_says_how_to_go_on(
    server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ragmeter.app.labels

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ragmeter.app.labels, "annotate", interrupted)
    output = tmp_path / "llm.jsonl"
    assert main(["labels", "annotate", str(_data(tmp_path)), "-o", str(output), *_judge(server)]) == 130
    assert "verdicts so far are in its cache; the same command goes on" in capsys.readouterr().err
    assert not output.exists()
