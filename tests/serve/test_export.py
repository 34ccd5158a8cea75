"""``ragmeter export``: a window of the store's scored traces as records that ``ragmeter run`` takes; the store read,
never written; the windows and outputs refused with the reason."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ragmeter.cli import main
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
