"""``ragmeter export``: a window of the store's scored traces as records that ``ragmeter run`` takes; the store read,
never written; the windows and outputs refused with the reason."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

from ragmeter import read_records
from ragmeter.cli import main
from ragmeter.io.demo import demo_file, demo_path
from ragmeter.io.native import record_to_dict
from ragmeter.serve.store import ScoredTrace, SqliteStore


def _store(path: Path) -> Path:
    with SqliteStore(path) as store:
        for n, (scored, answer) in enumerate(
            [(100.0, "At nine."), (200.0, "On Quay Street."), (300.0, None), (400.0, "No.")], start=1
        ):
            trace = f"{n:032x}"
            span = {
                "traceId": trace,
                "spanId": f"{n:016x}",
                "name": "rag",
                "startTimeUnixNano": "1",
                "endTimeUnixNano": "2",
            }
            store.accept({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}, now=scored - 1)
            store.mark_due(quiet_s=1.0, now=scored)
            record = (
                None
                if answer is None
                else {
                    "id": trace,
                    "question": f"question {n}",
                    "answer": answer,
                    "references": ["At nine."],
                    "metadata": {"model_id": "m1"},
                }
            )
            store.save_scores(ScoredTrace(trace, record, None if record else "no answer", {}, {}, False, {}, scored))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_window_becomes_records_that_run_scores(tmp_path: Path, capsys) -> None:
    store = _store(tmp_path / "serve.sqlite")
    before = _sha(store)
    out = tmp_path / "window.jsonl"
    assert (
        main(
            [
                "export",
                "--store",
                str(store),
                "--since",
                "1970-01-01T00:02:30",
                "--until",
                "1970-01-01T00:06:00",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["answer"] for r in rows] == ["On Quay Street."]  # 200 in; 300 has no record; 400 out
    assert rows[0]["metadata"] == {"model_id": "m1", "trace_id": f"{2:032x}", "scored_at": 200.0}
    assert (
        "1 records of the traces scored from 1970-01-01 00:02:30 to 00:06:00 UTC (1 traces without a record"
        in capsys.readouterr().out
    )
    assert main(["run", str(out), "--metrics", "lexical", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert _sha(store) == before


def test_what_export_refuses(tmp_path: Path, capsys) -> None:
    store = _store(tmp_path / "serve.sqlite")
    before = _sha(store)
    cases = [
        (["--last", "1h", "-o", str(store)], "-o"),  # the store itself
        (["--last", "soon", "-o", str(tmp_path / "a.jsonl")], "is not a duration"),
        (["--since", "yesterday", "-o", str(tmp_path / "a.jsonl")], "is not an ISO 8601 time"),
    ]
    for arguments, says in cases:
        assert main(["export", "--store", str(store), *arguments]) == 2
        assert says in capsys.readouterr().err
    assert (
        main(["export", "--store", str(tmp_path / "none.sqlite"), "--last", "1h", "-o", str(tmp_path / "a.jsonl")]) == 2
    )
    assert "no store at" in capsys.readouterr().err and not (tmp_path / "none.sqlite").exists()
    records = tmp_path / "records.jsonl"  # a file given that is not a store
    records.write_text('{"question": "q"}\n', "utf-8")
    assert main(["export", "--store", str(records), "--last", "1h", "-o", str(tmp_path / "a.jsonl")]) == 2
    assert "is not a ragmeter serve store" in capsys.readouterr().err
    assert records.read_text("utf-8") == '{"question": "q"}\n'
    assert main(["export", "--store", str(store), "--last", "1h", "-o", str(tmp_path / "a.jsonl")]) == 1
    assert "nothing written" in capsys.readouterr().out and not (tmp_path / "a.jsonl").exists()
    assert _sha(store) == before


def test_people_label_a_sample_of_a_window_and_estimate_what_they_would_say_of_all_of_it(
    tmp_path: Path, capsys
) -> None:
    """The human-calibrated figure of production: a window exported, scored, a random sample of it labelled
    (``labels template --sample``, filled here with Ana's demo labels), and ``estimate`` on the whole window."""
    demo = list(read_records(demo_path()))
    with SqliteStore(tmp_path / "serve.sqlite") as store:
        for n, record in enumerate(demo, start=1):
            trace = f"{n:032x}"
            span = {"traceId": trace, "spanId": f"{n:016x}", "name": "rag", "startTimeUnixNano": "1"}
            store.accept({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}, now=99.0)
            store.mark_due(quiet_s=1.0, now=100.0)
            row = {**record_to_dict(record), "id": trace}
            store.save_scores(ScoredTrace(trace, row, None, {}, {}, False, {}, 100.0 + n))
    window, run, sample = tmp_path / "window.jsonl", tmp_path / "run", tmp_path / "to-label.csv"
    export = ["export", "--store", str(tmp_path / "serve.sqlite"), "--since", "1970-01-01T00:00:00"]
    assert main([*export, "-o", str(window)]) == 0
    assert main(["run", str(window), "--metrics", "overlap", "--out", str(run), "--no-progress"]) == 0
    template = ["labels", "template", str(window), "--labels", "support_present", "--sample", "20", "--seed", "7"]
    assert main([*template, "-o", str(sample)]) == 0
    ana = {
        row["question"]: row["support_present"]
        for row in csv.DictReader(io.StringIO(demo_file("demo-labels-ana.csv").decode("utf-8")))
        if row["unit"] == "answer"
    }
    with sample.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["support_present"] = ana[row["question"]]
    with sample.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    estimate = ["estimate", str(run), str(sample), "--metric", "overlap", "--label", "support_present"]
    assert main([*estimate, "--format", "json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    labelled = [int(row["support_present"]) for row in rows]
    assert len(rows) == 20 and len({row["record_id"] for row in rows}) == 20
    assert figures["labelled_only"]["value"] == sum(labelled) / 20
    assert (figures["ppi"]["n_labelled"], figures["ppi"]["n_unlabelled"]) == (20, 25)
    assert round(figures["metric_mean"]["value"], 3) == 0.433  # the demo's Overlap, as the README shows it
