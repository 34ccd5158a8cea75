"""Options that would do nothing, or read a file as what it is not, are refused with one message naming the option:
``--input-format`` that contradicts the file (seen in its first bytes, or in its first records all failing), and
``--map`` naming a field that no record has. Every expected message is written out by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragmeter.cli import main
from ragmeter.core.errors import ConfigError, InputError
from ragmeter.io import check_file, read_records
from ragmeter.io.readers import parse_column_map

DEMO = Path(__file__).resolve().parents[2] / "src" / "ragmeter" / "data" / "demo.jsonl"
NATIVE = {"question": "q", "answer": "a"}


def _demo(tmp_path: Path) -> Path:
    return Path(shutil.copy(DEMO, tmp_path / "demo.jsonl"))


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_a_jsonl_file_read_as_csv_gets_one_error_naming_the_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _demo(tmp_path)
    expected = (
        f"{path}: --input-format csv reads this file as CSV, but its first line is a JSON object with keys "
        '"id", "question", "contexts", … and no "resourceSpans" (so not OTLP JSON), as in ragmeter\'s JSONL: '
        "pass --input-format native, or leave the option out to detect the format"
    )
    check = check_file(path, format="csv")
    assert (check.n_valid, check.n_invalid, str(check.file_error)) == (0, 0, expected)
    with pytest.raises(InputError) as caught:
        list(read_records(path, format="csv", skip_invalid=True))
    assert str(caught.value) == expected
    assert main(["validate", str(path), "--input-format", "csv"]) == 2
    assert _errors(capsys.readouterr().err) == [f"error: {expected}"]


def test_parquet_and_jsonl_forced_the_other_way_round(tmp_path: Path) -> None:
    table = tmp_path / "run.parquet"
    pq.write_table(pa.table({"question": ["q"], "answer": ["a"]}), table)
    check = check_file(table, format="native")
    assert str(check.file_error) == (
        f"{table}: --input-format native reads this file as ragmeter's JSONL, but it begins with PAR1, as Parquet "
        "files do: pass --input-format parquet, or leave the option out to detect the format"
    )
    lines = tmp_path / "run.jsonl"
    lines.write_text(json.dumps({"user_input": "q", "response": "a"}) + "\n", encoding="utf-8")
    assert str(check_file(lines, format="parquet").file_error) == (
        f"{lines}: --input-format parquet reads this file as Parquet, but its first line is a JSON object with keys "
        '"user_input", "response" and no "resourceSpans" (so not OTLP JSON), as in RAGAS JSONL: pass --input-format '
        "ragas, or leave the option out to detect the format"
    )
    text = tmp_path / "run.csv"
    text.write_text("question,answer\nq,a\n", encoding="utf-8")
    assert str(check_file(text, format="mtrag").file_error) == (
        f"{text}: --input-format mtrag reads this file as MT-RAG JSONL, but it is a .csv file whose first line is "
        "not a JSON object: pass --input-format csv, or leave the option out to detect the format"
    )


def test_jsonl_read_as_otlp_json_says_what_the_first_line_is_and_lacks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """OTLP JSON begins with '{' too: the message names what the first line holds and the key it lacks."""
    path = _demo(tmp_path)
    expected = (
        f"{path}: --input-format otel reads this file as OpenTelemetry traces (OTLP JSON), but its first line "
        'is a JSON object with keys "id", "question", "contexts", … and no "resourceSpans" (so not OTLP '
        "JSON), as in ragmeter's JSONL: pass --input-format native, or leave the option out to detect the "
        "format"
    )
    assert str(check_file(path, format="otel").file_error) == expected
    assert main(["validate", str(path), "--input-format", "otel"]) == 2
    assert _errors(capsys.readouterr().err) == [f"error: {expected}"]
    pretty = tmp_path / "pretty.json"  # JSON over several lines: no whole first object
    pretty.write_text('{\n  "question": "q",\n  "answer": "a"\n}\n', encoding="utf-8")
    assert str(check_file(pretty, format="otel").file_error) == (
        f"{pretty}: --input-format otel reads this file as OpenTelemetry traces (OTLP JSON), but its first line, "
        "which begins with '{', is neither a whole JSON object nor OTLP JSON's {\"resourceSpans\": …}: pass "
        "--input-format native, or leave the option out to detect the format"
    )
    late = tmp_path / "late.jsonl"  # the key, but not where OTLP JSON puts it
    late.write_text(json.dumps({"note": "x" * 300, "resourceSpans": []}) + "\n", encoding="utf-8")
    assert str(check_file(late, format="otel").file_error) == (
        f"{late}: --input-format otel reads this file as OpenTelemetry traces (OTLP JSON), but its first line is a "
        'JSON object with keys "note", "resourceSpans" ("resourceSpans" among its keys, but not first as in OTLP '
        "JSON), as in ragmeter's JSONL: pass --input-format native, or leave the option out to detect the format"
    )


def test_a_jsonl_flavour_whose_first_records_all_fail_names_the_one_the_file_looks_like(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _demo(tmp_path)
    expected = (
        f"{path}: --input-format mtrag: the first 5 records all fail as MT-RAG JSONL (line 1, field 'input': "
        "missing: expected the conversation turns [{speaker, text}, …]), and the file looks like ragmeter's "
        "JSONL: pass --input-format native, or leave the option out to detect the format"
    )
    check = check_file(path, format="mtrag")
    assert (check.n_valid, check.n_invalid, str(check.file_error)) == (0, 0, expected)
    assert main(["validate", str(path), "--input-format", "mtrag"]) == 2
    assert _errors(capsys.readouterr().err) == [f"error: {expected}"]


def test_a_short_file_that_fails_entirely_gets_the_hint_too(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(NATIVE) + "\n" for _ in range(2)), encoding="utf-8")
    assert str(check_file(path, format="ragas").file_error) == (
        f"{path}: --input-format ragas: the 2 records all fail as RAGAS JSONL (line 1, field 'user_input': missing: "
        "expected a string), and the file looks like ragmeter's JSONL: pass --input-format native, or leave the "
        "option out to detect the format"
    )


def test_a_forced_format_that_detection_agrees_with_lists_the_records_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps({"question": "q"}) + "\n" for _ in range(6)), encoding="utf-8")
    check = check_file(path, format="native")  # the records are wrong, not the format
    assert (check.file_error, check.n_invalid) == (None, 6)
    mixed = tmp_path / "mixed.jsonl"  # a good record among the first five: no hint
    mixed.write_text(
        "".join(json.dumps(row) + "\n" for row in [{"x": 1}] * 4 + [{"user_input": "q", "response": "a"}] + [{"x": 1}]),
        encoding="utf-8",
    )
    check = check_file(mixed, format="ragas")
    assert (check.file_error, check.n_valid, check.n_invalid) == (None, 1, 5)
    assert [e.line for e in check.errors] == [1, 2, 3, 4, 6]
    assert len(check_file(_demo(tmp_path), format="native").errors) == 0


def test_map_names_only_record_fields() -> None:
    valid = (
        "id, question, answer, contexts, references, reference, history, answerability, labels, usage, "
        "latency_ms, action, qrels, nuggets, metadata, prompt_tokens, completion_tokens, model_id, conversation_id, "
        "run_id; in RAGAS-style tables also user_input, response, retrieved_contexts, retrieved_context_ids"
    )
    with pytest.raises(ConfigError) as caught:
        parse_column_map(["nosuchfield=x"])
    assert str(caught.value) == (
        f"--map nosuchfield=x: 'nosuchfield' is not a record field. FIELD is one of {valid} "
        "(unmapped columns keep their names; unknown ones go to metadata)"
    )
    with pytest.raises(
        ConfigError,
        match=r"^--map qestion=q: 'qestion' is not a record field \(did you mean "
        r"'question'\?\)\. FIELD is one of id, ",
    ):
        parse_column_map(["qestion=q"])
    with pytest.raises(ConfigError, match=r"^--map names 'question' twice \(columns 'a' and 'b'\): keep one$"):
        parse_column_map(["question=a", "question=b"])
    with pytest.raises(
        ConfigError,
        match=r"^--map maps both 'question' and 'answer' to column 'text': a column "
        r"fills one field$",
    ):
        parse_column_map(["question=text", "answer=text"])
    assert parse_column_map(["question = query", "model_id=system", "prompt_tokens=in"]) == {
        "question": "query",
        "model_id": "system",
        "prompt_tokens": "in",
    }


def test_the_command_refuses_an_unknown_map_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("question,answer\nq,a\n", encoding="utf-8")
    assert main(["validate", str(path), "--map", "nosuchfield=answer"]) == 2
    assert _errors(capsys.readouterr().err)[0].startswith(
        "error: --map nosuchfield=answer: 'nosuchfield' is not a record field. FIELD is one of id, question,"
    )


def test_a_table_whose_rows_all_fail_is_not_sent_to_another_format(tmp_path: Path) -> None:
    """A CSV under another suffix with the wrong header: its content is no JSON, so no other format is named."""
    path = tmp_path / "run.txt"
    path.write_text("query,reply\nq,a\nq,b\n", encoding="utf-8")
    check = check_file(path, format="csv")
    assert (check.file_error, check.n_invalid) == (None, 2)
