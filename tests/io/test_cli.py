"""The ``ragmeter`` command, called in-process (``ragmeter.cli.main``) and once as a subprocess.

Every run uses ``--embedder hashing`` except the one real-model demo run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_data_file

import ragmeter
from ragmeter.cli import main
from ragmeter.io.demo import demo_path

# The seeds 000/001 report, which 'ragmeter run' scores when no metric is named (written out, not derived).
DEFAULT_METRICS = {
    "overlap",
    "faithfulness_fallback",
    "abstained",
    "idk_citation_count",
    "malformed_citation_count",
    "total_tokens",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "exact_match",
    "token_f1",
    "rouge_l",
}

DEMO_IDS = [f"q{i:02d}" for i in range(1, 46)]
SUMMARY_KEYS = {
    "metric",
    "family",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "n_undefined",
    "undefined_reasons",
    "notes",
    "signature",
}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def item_rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "items.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    """Four problems, each on its own line, and two good records."""
    lines = [
        json.dumps({"id": "g1", "question": "What is 2+2?", "answer": "4", "references": ["4"], "latency_ms": 10}),
        '{"id": "b1", "question": "q", "answer": "a"',  # 2 broken JSON
        json.dumps({"id": "b2", "question": "q"}),  # 3 missing answer
        json.dumps(
            {"id": "b3", "question": "q", "answer": "a", "contexts": [{"doc_id": "d1", "text": "t"}, {"text": "no id"}]}
        ),  # 4 chunk w/o doc_id
        json.dumps({"id": "b4", "question": "q", "answer": "a", "latency_ms": "12ms"}),  # 5 latency text
        json.dumps(
            {"id": "g2", "question": "Capital of France?", "answer": "Paris", "references": ["Paris"], "latency_ms": 30}
        ),
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_bad_file_errors(stderr: str, path: Path) -> None:
    errors = error_lines(stderr)
    assert len(errors) == 4, stderr
    assert errors[0].startswith(f"error: {path}:2: ") and "broken JSON" in errors[0]
    assert errors[1].startswith(f"error: {path}:3 field 'answer': ")
    assert errors[2].startswith(f"error: {path}:4 field 'contexts[1].doc_id': ")
    assert errors[3].startswith(f"error: {path}:5 field 'latency_ms': ")
    assert "Traceback" not in stderr


# ---------------------------------------------------------------- the real default run


def test_demo_run_with_the_default_embedder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "run", "--demo", "--out", str(out_dir))
    assert code == 0, err
    for label in (
        "Faithfulness (fallback)",
        "Overlap",
        "F1",
        "Tokens (mean)",
        "P50 latency (ms)",
        "Abstain rate",
        "EM",
        "P95 latency (ms)",
        "IDK+Cit count",
    ):
        assert label in out, label
    assert out.index("Abstain rate") < out.index("P95 latency (ms)")  # primary table before the appendix
    assert "N = 45" in out
    lines = (out_dir / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 45
    assert [json.loads(line)["id"] for line in lines] == DEMO_IDS
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_items"] == 45
    assert summary["input"] == str(demo_path())
    assert {s["metric"] for s in summary["summaries"]} == DEFAULT_METRICS
    assert "items.jsonl" in err


# ---------------------------------------------------------------- run options


def test_json_output_has_every_metric_with_interval_and_signature(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run_cli(
        capsys, "run", "--demo", "--embedder", "hashing", "--format", "json", "--out", str(tmp_path)
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["n_items"] == 45
    assert data["out"] == str(tmp_path)
    summaries = data["summaries"]
    assert {s["metric"] for s in summaries} == DEFAULT_METRICS
    assert set(data["signatures"]) == DEFAULT_METRICS
    for s in summaries:
        assert set(s) == SUMMARY_KEYS, s
        assert s["n"] + s["n_undefined"] == 45
        assert s["signature"].startswith(s["metric"] + "|")
        assert isinstance(s["value"], float)
        if s["ci_low"] is not None:
            assert s["ci_low"] <= s["value"] <= s["ci_high"]
    by_key = {(s["metric"], s["statistic"]): s for s in summaries}
    assert {stat for metric, stat in by_key if metric == "latency_ms"} == {"p50", "p95"}
    # demo.jsonl: q27 and q43 have no reference, q15 and q33 no usage, q22 no latency
    assert (by_key["exact_match", "rate"]["n"], by_key["exact_match", "rate"]["n_undefined"]) == (43, 2)
    assert by_key["exact_match", "rate"]["undefined_reasons"] == {"record has no reference answer": 2}
    assert (by_key["total_tokens", "mean"]["n"], by_key["total_tokens", "mean"]["n_undefined"]) == (43, 2)
    assert (by_key["latency_ms", "p50"]["n"], by_key["latency_ms", "p50"]["n_undefined"]) == (44, 1)
    assert by_key["idk_citation_count", "sum"]["ci_low"] is None
    overlap_signature = by_key["overlap", "mean"]["signature"]
    assert "|embedder:hashing" in overlap_signature  # the backend chosen on the command line
    assert "|n_resamples:2000|" in overlap_signature and "|seed:0|" in overlap_signature


def test_parquet_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    code, _, err = run_cli(
        capsys,
        "run",
        "--demo",
        "--embedder",
        "hashing",
        "--parquet",
        "--metrics",
        "exact_match,token_f1",
        "--out",
        str(tmp_path),
    )
    assert code == 0, err
    table = pq.read_table(tmp_path / "items.parquet")
    assert table.num_rows == 45
    assert table.column_names == ["id", "model_id", "exact_match", "token_f1", "undefined"]
    assert set(table.column("model_id").to_pylist()) == {"demo-rag-1"}
    assert table.column("id").to_pylist() == DEMO_IDS
    em = dict(zip(DEMO_IDS, table.column("exact_match").to_pylist(), strict=True))
    assert em["q01"] == 1.0 and em["q05"] == 0.0
    assert em["q27"] is None or em["q27"] != em["q27"]  # undefined: null or NaN
    assert json.loads(dict(zip(DEMO_IDS, table.column("undefined").to_pylist(), strict=True))["q27"]) == {
        "exact_match": "record has no reference answer",
        "token_f1": "record has no reference answer",
    }


def test_metrics_option_limits_the_summaries(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        "--demo",
        "--embedder",
        "hashing",
        "--format",
        "json",
        "--metrics",
        "exact_match,token_f1",
        "--out",
        str(tmp_path),
    )
    assert code == 0, err
    data = json.loads(out)
    assert [(s["metric"], s["statistic"]) for s in data["summaries"]] == [("exact_match", "rate"), ("token_f1", "mean")]
    assert all(set(row["scores"]) == {"exact_match", "token_f1"} for row in item_rows(tmp_path))


def test_limit_scores_the_first_records(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        "--demo",
        "--embedder",
        "hashing",
        "--format",
        "json",
        "--limit",
        "5",
        "--metrics",
        "exact_match,token_f1,latency_ms",
        "--out",
        str(tmp_path),
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["n_items"] == 5
    rows = item_rows(tmp_path)
    assert [r["id"] for r in rows] == ["q01", "q02", "q03", "q04", "q05"]
    by_key = {(s["metric"], s["statistic"]): s for s in data["summaries"]}
    # q01-q03 answer one reference word for word once the citation and punctuation go: EM = 3/5
    assert by_key["exact_match", "rate"]["value"] == pytest.approx(0.6)
    # q05: 15 answer tokens, 7 reference tokens, 6 shared: F1 = 2·(6/15)·(6/7) / (6/15 + 6/7) = 6/11
    assert rows[4]["scores"]["token_f1"] == pytest.approx(6 / 11)
    # latencies 1152, 2138.4, 531.7, 1984.3, 1493: median 1493; p95 = 1984.3 + 0.8·(2138.4 − 1984.3)
    assert by_key["latency_ms", "p50"]["value"] == pytest.approx(1493.0)
    assert by_key["latency_ms", "p95"]["value"] == pytest.approx(2107.58)


def test_limit_below_one_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "run", "--demo", "--embedder", "hashing", "--limit", "0", "--out", str(tmp_path))
    assert code == 2
    assert error_lines(err) == ["error: --limit must be at least 1"]


def test_unknown_metric_suggests_a_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_cli(
        capsys, "run", "--demo", "--embedder", "hashing", "--metrics", "exact_match,token_f2", "--out", str(out_dir)
    )
    assert code == 2
    assert out == ""
    errors = error_lines(err)
    assert len(errors) == 1 and "'token_f2'" in errors[0] and "Did you mean token_f1?" in errors[0]
    assert "Traceback" not in err
    assert not out_dir.exists()  # fails before reading or writing anything


# ---------------------------------------------------------------- bad input


def test_bad_file_lists_every_problem_and_exits_2(
    capsys: pytest.CaptureFixture[str], bad_file: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "run", str(bad_file), "--embedder", "hashing", "--out", str(out_dir))
    assert code == 2
    assert out == ""
    assert_bad_file_errors(err, bad_file)
    assert "4 bad record(s), 2 valid" in err and "--skip-invalid" in err
    assert not out_dir.exists()


def test_bad_file_with_skip_invalid_scores_the_good_records(
    capsys: pytest.CaptureFixture[str], bad_file: Path, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        str(bad_file),
        "--skip-invalid",
        "--embedder",
        "hashing",
        "--format",
        "json",
        "--metrics",
        "exact_match,latency_ms",
        "--out",
        str(tmp_path),
    )
    assert code == 0, err
    assert_bad_file_errors(err, bad_file)
    assert "skipped 4 bad record(s)" in err and "scoring 2" in err
    data = json.loads(out)
    assert data["n_items"] == 2
    assert [r["id"] for r in item_rows(tmp_path)] == ["g1", "g2"]
    by_key = {(s["metric"], s["statistic"]): s for s in data["summaries"]}
    assert by_key["exact_match", "rate"]["value"] == 1.0  # "4" = "4", "Paris" = "Paris"
    assert by_key["latency_ms", "p50"]["value"] == pytest.approx(20.0)  # median of 10 and 30


def test_max_errors_limits_the_listing(capsys: pytest.CaptureFixture[str], bad_file: Path, tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "validate", str(bad_file), "--max-errors", "1")
    assert code == 2
    assert len(error_lines(err)) == 1
    assert "… and 3 more bad records" in err


def test_empty_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    code, out, err = run_cli(capsys, "run", str(path), "--embedder", "hashing", "--out", str(tmp_path / "out"))
    assert code == 2
    assert out == ""
    assert error_lines(err) == [f"error: {path}: the file holds no records"]
    assert "Traceback" not in err


def test_empty_file_gives_one_clear_message(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    code, _, err = run_cli(capsys, "run", str(path), "--embedder", "hashing", "--out", str(tmp_path / "out"))
    assert code == 2
    assert err.strip().splitlines() == [f"error: {path}: the file holds no records"]


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    code, _, err = run_cli(capsys, "run", str(path), "--embedder", "hashing", "--out", str(tmp_path / "out"))
    assert code == 2
    assert error_lines(err) == [
        f"error: {path}: no such file: check the path (a relative one is read from the working directory)"
    ]


def test_csv_with_column_mapping(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("query,response_text,gold\nWhat is 2+2?,4,4\nCapital of France?,Lyon,Paris\n", encoding="utf-8")
    code, out, err = run_cli(
        capsys,
        "run",
        str(path),
        "--map",
        "question=query",
        "--map",
        "answer=response_text",
        "--map",
        "references=gold",
        "--metrics",
        "exact_match",
        "--format",
        "json",
        "--embedder",
        "hashing",
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["n_items"] == 2
    assert data["summaries"][0]["value"] == 0.5
    assert [r["id"] for r in item_rows(tmp_path / "out")] == ["2", "3"]  # CSV line numbers


def test_bad_map_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("question,answer\nq,a\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "validate", str(path), "--map", "question")
    assert code == 2
    assert error_lines(err) == ["error: --map takes FIELD=COLUMN, got 'question'"]


# ---------------------------------------------------------------- validate and metrics


def test_validate_good_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "validate", str(demo_path()))
    assert code == 0, err
    assert out.strip() == f"{demo_path()}: 45 valid record(s)"
    assert error_lines(err) == []


def test_validate_bad_file(capsys: pytest.CaptureFixture[str], bad_file: Path) -> None:
    code, out, err = run_cli(capsys, "validate", str(bad_file))
    assert code == 2
    assert out == ""
    assert_bad_file_errors(err, bad_file)


def test_validate_bad_file_with_skip_invalid(capsys: pytest.CaptureFixture[str], bad_file: Path) -> None:
    code, out, err = run_cli(capsys, "validate", str(bad_file), "--skip-invalid")
    assert code == 0
    assert out.strip() == f"{bad_file}: 2 valid record(s)"
    assert len(error_lines(err)) == 4


def test_validate_mtrag_sample(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_data_file("mtrag", "sample_responses-10.jsonl")
    code, out, err = run_cli(capsys, "validate", str(path))
    assert code == 0, err
    assert out.strip() == f"{path}: 10 valid record(s)"


def test_metrics_lists_every_registered_metric(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "metrics")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["metric", "family", "range", "needs"]
    table = out.split("\n\n")[0].splitlines()[1:]  # a description may take the lines beneath its row
    listed = [line.split()[0] for line in table if not line.startswith(" ")]
    assert listed == [m.name for m in ragmeter.list_metrics()]
    assert len(listed) >= 10


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ragmeter {ragmeter.__version__}"


# ---------------------------------------------------------------- as a subprocess


def test_subprocess_on_bad_file_prints_no_traceback(bad_file: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter.cli",
            "run",
            str(bad_file),
            "--embedder",
            "hashing",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert_bad_file_errors(proc.stderr, bad_file)
