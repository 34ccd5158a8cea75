"""Readers: native JSONL, MT-RAG, RAGAS, CSV/TSV, Parquet; errors that name file, line and field.

Every expected value below is worked out by hand from the input written in the test.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_data_file

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import Answerability, Chunk, Nugget, Record, Turn, Usage
from ragmeter.io import check_file, detect_format, iter_records, read_records
from ragmeter.io.formats.mtrag import record_from_mtrag

DEMO = Path(__file__).resolve().parents[2] / "src" / "ragmeter" / "data" / "demo.jsonl"


# ---------------------------------------------------------------- helpers


def write_lines(tmp_path: Path, *lines: Any, name: str = "records.jsonl") -> Path:
    """One JSONL line per item: dicts are dumped, strings written verbatim."""
    path = tmp_path / name
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), encoding="utf-8"
    )
    return path


def write_csv(tmp_path: Path, rows: list[list[Any]], name: str = "records.csv", delimiter: str = ",") -> Path:
    path = tmp_path / name
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, delimiter=delimiter).writerows(rows)
    return path


def one_record(path: Path, **kw: Any) -> Record:
    items = list(iter_records(path, **kw))
    assert len(items) == 1, items
    assert isinstance(items[0], Record), items[0]
    return items[0]


def one_error(path: Path, **kw: Any) -> InputError:
    items = list(iter_records(path, **kw))
    errors = [i for i in items if isinstance(i, InputError)]
    assert len(errors) == 1, items
    return errors[0]


def minimal(**extra: Any) -> dict[str, Any]:
    return {"question": "q", "answer": "a", **extra}


# ---------------------------------------------------------------- 1. native JSONL: every field


def test_native_every_field_parses_into_typed_record(tmp_path: Path) -> None:
    obj = {
        "id": "r1",
        "question": "When does the library close?",
        "answer": "At 18:00 [CIT:d1].",
        "contexts": [
            {"doc_id": "d1", "text": "Open until 18:00.", "title": "Hours", "labels": {"evidence_sufficient": True}},
            {"doc_id": 7, "text": "Closed on Sundays."},
        ],
        "references": ["18:00", "6 pm"],
        "history": [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}],
        "answerability": "partial",
        "labels": {"helpful": 1},
        "usage": [{"prompt_tokens": 100, "completion_tokens": 20}, {"prompt_tokens": 5}],
        "latency_ms": 1234,
        "action": "ABSTAIN",
        "metadata": {"run_id": "run-a", "conversation_id": 42},
    }
    record = one_record(write_lines(tmp_path, obj))
    assert record == Record(
        id="r1",
        question="When does the library close?",
        answer="At 18:00 [CIT:d1].",
        contexts=(
            Chunk("d1", "Open until 18:00.", "Hours", {"evidence_sufficient": True}),
            Chunk("7", "Closed on Sundays.", None, {}),
        ),
        references=("18:00", "6 pm"),
        history=(Turn("user", "hi"), Turn("assistant", "hello")),
        answerability=Answerability.PARTIAL,
        labels={"helpful": 1},
        usage=(Usage(100, 20), Usage(5, 0)),
        latency_ms=1234.0,
        action="ABSTAIN",
        metadata={"run_id": "run-a", "conversation_id": 42},
    )
    # types, not only equal values
    assert type(record.latency_ms) is float
    assert type(record.contexts[1].doc_id) is str
    assert all(type(u.prompt_tokens) is int and type(u.completion_tokens) is int for u in record.usage or ())
    assert isinstance(record.contexts, tuple) and isinstance(record.references, tuple)
    assert isinstance(record.history, tuple) and isinstance(record.usage, tuple)
    assert record.conversation_id == "42"


def test_native_minimal_record_defaults(tmp_path: Path) -> None:
    record = one_record(write_lines(tmp_path, minimal()))
    assert record == Record(id="1", question="q", answer="a")
    assert record.usage is None and record.latency_ms is None and record.answerability is None
    assert record.metadata == {} and record.labels == {}


def test_native_empty_answer_is_allowed(tmp_path: Path) -> None:
    assert one_record(write_lines(tmp_path, minimal(answer=""))).answer == ""


def test_native_reference_string(tmp_path: Path) -> None:
    record = one_record(write_lines(tmp_path, minimal(reference="Paris")))
    assert record.references == ("Paris",)
    assert record.answerability is Answerability.ANSWERABLE


def test_native_references_list(tmp_path: Path) -> None:
    record = one_record(write_lines(tmp_path, minimal(references=["Paris", "paris, France"])))
    assert record.references == ("Paris", "paris, France")


def test_native_reference_and_references_together_is_an_error(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal(reference="x", references=["y"]))
    err = one_error(path)
    assert (err.path, err.line, err.field) == (str(path), 1, "reference")
    assert "not both" in str(err)
    assert str(err).startswith(f"{path}:1 field 'reference': ")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, None),
        ({"references": []}, None),
        ({"reference": "   "}, None),  # only blank references: unknown
        ({"references": ["", " "]}, None),
        ({"references": ["", "x"]}, Answerability.ANSWERABLE),
        ({"reference": "x"}, Answerability.ANSWERABLE),
        ({"reference": "x", "answerability": "UNANSWERABLE"}, Answerability.UNANSWERABLE),  # explicit wins
        ({"answerability": "conversational"}, Answerability.CONVERSATIONAL),  # case-insensitive
        ({"answerability": "UNDERSPECIFIED"}, Answerability.UNDERSPECIFIED),
    ],
)
def test_native_answerability_default(tmp_path: Path, extra: dict[str, Any], expected: Answerability | None) -> None:
    assert one_record(write_lines(tmp_path, minimal(**extra))).answerability is expected


def test_native_usage_as_one_object(tmp_path: Path) -> None:
    record = one_record(write_lines(tmp_path, minimal(usage={"prompt_tokens": 10, "completion_tokens": 3})))
    assert record.usage == (Usage(10, 3),)


def test_native_usage_as_list_and_empty_list(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        minimal(id="a", usage=[{"prompt_tokens": 1, "completion_tokens": 2}, {"completion_tokens": 4}]),
        minimal(id="b", usage=[]),
    )
    a, b = read_records(path)
    assert a.usage == (Usage(1, 2), Usage(0, 4))
    assert b.usage == ()  # no LLM call made, which differs from "not logged" (None)


def test_native_integer_ids_become_strings(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal(id=5), minimal(id=0), minimal(id="x7"))
    assert [r.id for r in read_records(path)] == ["5", "0", "x7"]


def test_native_default_id_is_the_file_line_number(tmp_path: Path) -> None:
    # line 1 blank, line 2 record, line 3 blank, line 4 record
    path = write_lines(tmp_path, "", minimal(), "   ", minimal(answer="b"))
    assert [r.id for r in read_records(path)] == ["2", "4"]


def test_native_unknown_keys_land_in_metadata(tmp_path: Path) -> None:
    record = one_record(write_lines(tmp_path, minimal(team="blue", score=3, metadata={"run_id": "r9"})))
    assert record.metadata == {"team": "blue", "score": 3, "run_id": "r9"}


def test_native_metadata_object_wins_over_top_level_key(tmp_path: Path) -> None:
    record = one_record(write_lines(tmp_path, minimal(model_id="top", metadata={"model_id": "inner"})))
    assert record.metadata == {"model_id": "inner"}


def test_native_nuggets_are_strings_or_objects_with_their_importance(tmp_path: Path) -> None:
    record = one_record(
        write_lines(
            tmp_path,
            minimal(nuggets=["Closes at 18:00", {"text": "On Fridays"}, {"text": "Opens at 9", "importance": "okay"}]),
        )
    )
    assert record.nuggets == (Nugget("Closes at 18:00", True), Nugget("On Fridays", True), Nugget("Opens at 9", False))
    assert one_record(write_lines(tmp_path, minimal())).nuggets is None
    table = write_csv(
        tmp_path,
        [
            ["question", "answer", "nuggets", "qrels"],
            ["q", "a", json.dumps(["Closes at 18:00"]), json.dumps({"d1": 2})],
        ],
    )
    from_table = one_record(table)
    assert (from_table.nuggets, from_table.qrels) == ((Nugget("Closes at 18:00", True),), {"d1": 2})


@pytest.mark.parametrize(
    ("nuggets", "field", "reason"),
    [
        ([], "nuggets", "is an empty list: leave the field out"),
        (["fact", "  "], "nuggets[1]", "is empty: a nugget states a fact"),
        ([{"text": "fact", "importance": "must"}], "nuggets[0].importance", "expected vital or okay, found 'must'"),
        ([{"importance": "vital"}], "nuggets[0].text", "missing: expected a string"),
        ([7], "nuggets[0]", "expected an object, found"),
        ("fact", "nuggets", "expected a list, found a string"),
    ],
)
def test_native_bad_nuggets_name_the_field(tmp_path: Path, nuggets: Any, field: str, reason: str) -> None:
    error = one_error(write_lines(tmp_path, minimal(), minimal(nuggets=nuggets)))
    assert (error.line, error.field) == (2, field)
    assert error.reason.startswith(reason)


def test_demo_file_reads_45_records() -> None:
    records = list(read_records(DEMO))
    assert [r.id for r in records] == [f"q{i:02d}" for i in range(1, 46)]
    assert records[0].references == ("The Central Library closes at 18:00 on Fridays.", "18:00", "6 pm")
    assert records[0].usage == (Usage(608, 227),)
    assert records[0].latency_ms == 1152.0
    assert records[0].conversation_id == "c01"


# ---------------------------------------------------------------- 2. errors name file, line and field


def test_broken_json_names_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal(), '{"question": "q", "answer": ')
    err = one_error(path)
    assert (err.path, err.line, err.field) == (str(path), 2, None)
    assert "broken JSON" in str(err)
    assert str(err).startswith(f"{path}:2: ")


def test_missing_answer(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal(), {"id": "x", "question": "q"})
    err = one_error(path)
    assert (err.path, err.line, err.field) == (str(path), 2, "answer")
    assert "missing" in err.reason
    assert f"{path}:2 field 'answer'" in str(err)


def test_missing_question(tmp_path: Path) -> None:
    err = one_error(write_lines(tmp_path, {"answer": "a"}))
    assert (err.line, err.field) == (1, "question")


def test_answer_of_wrong_type(tmp_path: Path) -> None:
    err = one_error(write_lines(tmp_path, minimal(answer=["a"])))
    assert err.field == "answer"
    assert "expected a string, found a list" in err.reason


def test_chunk_without_doc_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal(contexts=[{"doc_id": "d1", "text": "t"}, {"text": "no id here"}]))
    err = one_error(path)
    assert (err.path, err.line, err.field) == (str(path), 1, "contexts[1].doc_id")
    assert f"{path}:1 field 'contexts[1].doc_id'" in str(err)


def test_chunk_that_is_not_an_object(tmp_path: Path) -> None:
    err = one_error(write_lines(tmp_path, minimal(contexts=["bare text"])))
    assert err.field == "contexts[0]"


@pytest.mark.parametrize("latency", ["slow", "12ms", "1234.5", True, [5]])
def test_non_numeric_latency(tmp_path: Path, latency: Any) -> None:
    # in JSONL, a number written as a string is not a number
    path = write_lines(tmp_path, minimal(latency_ms=latency))
    err = one_error(path)
    assert (err.line, err.field) == (1, "latency_ms")
    assert "expected a number" in err.reason
    assert f"{path}:1 field 'latency_ms'" in str(err)


def test_negative_latency(tmp_path: Path) -> None:
    err = one_error(write_lines(tmp_path, minimal(latency_ms=-5)))
    assert (err.line, err.field) == (1, "latency_ms")
    assert "≥ 0" in err.reason and "-5" in err.reason


def test_zero_latency_is_valid(tmp_path: Path) -> None:
    assert one_record(write_lines(tmp_path, minimal(latency_ms=0))).latency_ms == 0.0


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        ({"prompt_tokens": 12.5}, "usage.prompt_tokens"),
        ({"prompt_tokens": "12"}, "usage.prompt_tokens"),
        ({"prompt_tokens": 1, "completion_tokens": -3}, "usage.completion_tokens"),
        ([{"prompt_tokens": 1}, {"completion_tokens": 2.5}], "usage[1].completion_tokens"),
        ({}, "usage"),
        ([{"prompt_tokens": 1}, "x"], "usage[1]"),
        ("100", "usage"),
    ],
)
def test_bad_usage(tmp_path: Path, usage: Any, field: str) -> None:
    err = one_error(write_lines(tmp_path, minimal(usage=usage)))
    assert (err.line, err.field) == (1, field)


def test_whole_float_token_count_is_accepted(tmp_path: Path) -> None:
    assert one_record(write_lines(tmp_path, minimal(usage={"prompt_tokens": 12.0}))).usage == (Usage(12, 0),)


def test_bad_answerability(tmp_path: Path) -> None:
    err = one_error(write_lines(tmp_path, minimal(answerability="MAYBE")))
    assert (err.line, err.field) == (1, "answerability")
    for choice in ("ANSWERABLE", "PARTIAL", "UNANSWERABLE", "CONVERSATIONAL", "UNDERSPECIFIED", "'MAYBE'"):
        assert choice in err.reason


def test_json_array_file(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps([minimal(), minimal(answer="b")]) + "\n", encoding="utf-8")
    items = list(iter_records(path))
    assert len(items) == 1
    err = items[0]
    assert isinstance(err, InputError)
    assert (err.path, err.line) == (str(path), 1)
    assert "JSON array" in err.reason and "jq" in err.reason


def test_pretty_printed_json_array_file_gives_one_error(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps([minimal(), minimal(answer="b")], indent=2), encoding="utf-8")
    items = list(iter_records(path))
    assert len(items) == 1 and isinstance(items[0], InputError)
    assert items[0].line == 1 and "JSON array" in items[0].reason


@pytest.mark.parametrize("text", ["", "\n  \n\t\n"], ids=["empty", "whitespace-only"])
def test_file_without_records(tmp_path: Path, text: str) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(text, encoding="utf-8")
    items = list(iter_records(path))
    assert len(items) == 1
    err = items[0]
    assert isinstance(err, InputError)
    assert (err.path, err.line, err.field) == (str(path), None, None)
    assert str(err) == f"{path}: the file holds no records"
    with pytest.raises(InputError, match="holds no records"):
        list(read_records(path))
    check = check_file(path)
    assert (check.n_valid, check.n_invalid, check.ok) == (0, 0, False)
    assert check.file_error is not None and "holds no records" in str(check.file_error)


def test_repeated_id_points_at_first_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal(id="a"), minimal(id="b"), minimal(id="a"))
    items = list(iter_records(path))
    assert [type(i) for i in items] == [Record, Record, InputError]
    err = items[2]
    assert (err.path, err.line, err.field) == (str(path), 3, "id")
    assert "'a'" in err.reason and "line 1" in err.reason


def test_repeated_id_integer_and_string_collide(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal(id=1), minimal(id="1"))
    err = one_error(path)
    assert (err.line, err.field) == (2, "id") and "line 1" in err.reason


def test_default_id_collides_with_explicit_id(tmp_path: Path) -> None:
    # line 2 has no id, so its id is "2", which line 1 already uses
    path = write_lines(tmp_path, minimal(id="2"), minimal())
    err = one_error(path)
    assert (err.line, err.field) == (2, "id")


@pytest.mark.parametrize(
    ("line", "kind"),
    [("[1,2]", "a list"), ("42", "a number"), ('"text"', "a string"), ("null", "null"), ("true", "a boolean")],
)
def test_non_object_line(tmp_path: Path, line: str, kind: str) -> None:
    path = write_lines(tmp_path, minimal(), line)  # line 2, so a list is not mistaken for a JSON array file
    err = one_error(path)
    assert (err.path, err.line, err.field) == (str(path), 2, None)
    assert err.reason == f"expected a JSON object per record, found {kind}"


@pytest.mark.parametrize("bad_id", [True, 1.5, {"a": 1}])
def test_bad_id_type(tmp_path: Path, bad_id: Any) -> None:
    err = one_error(write_lines(tmp_path, minimal(id=bad_id)))
    assert (err.line, err.field) == (1, "id")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"question": "caf\xe9", "answer": "a"}\n')
    err = one_error(path)  # an error of the line, yielded like any bad record (tests/io/test_bad_input.py)
    assert (err.path, err.line, err.field) == (str(path), 1, None)
    assert "UTF-8" in err.reason


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        list(iter_records(tmp_path / "nope.jsonl"))


def test_unknown_format_and_misplaced_column_map(tmp_path: Path) -> None:
    path = write_lines(tmp_path, minimal())
    with pytest.raises(ConfigError, match="unknown input format"):
        list(iter_records(path, format="xml"))
    with pytest.raises(ConfigError, match="CSV and Parquet"):
        list(iter_records(path, column_map={"question": "q"}))


def test_input_error_is_a_value_error_with_reason() -> None:
    err = InputError("bad thing", path="f.jsonl", line=3, field="contexts[2].doc_id")
    assert isinstance(err, ValueError)
    assert str(err) == "f.jsonl:3 field 'contexts[2].doc_id': bad thing"
    assert err.reason == "bad thing"
    assert str(InputError("x", field="answer")) == "field 'answer': x"
    assert str(InputError("x")) == "x"


# ---------------------------------------------------------------- 3. check_file and skip_invalid


@pytest.fixture
def five_problems(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path,
        minimal(id="g1"),  # 1 good
        '{"id": "b1", "question": "q", "answer": "a"',  # 2 broken JSON
        {"id": "b2", "question": "q"},  # 3 missing answer
        minimal(id="g2"),  # 4 good
        minimal(id="b3", contexts=[{"doc_id": "d", "text": "t"}, {"text": "t"}]),  # 5 chunk without doc_id
        "",  # 6 blank
        minimal(id="b4", latency_ms="slow"),  # 7 non-numeric latency
        minimal(id="g1"),  # 8 repeats line 1's id
    )


def test_check_file_collects_every_bad_record(five_problems: Path) -> None:
    check = check_file(five_problems)
    assert (check.n_valid, check.n_invalid, check.ok) == (2, 5, False)
    assert [(e.line, e.field) for e in check.errors] == [
        (2, None),
        (3, "answer"),
        (5, "contexts[1].doc_id"),
        (7, "latency_ms"),
        (8, "id"),
    ]
    assert all(e.path == str(five_problems) for e in check.errors)
    assert "broken JSON" in check.errors[0].reason
    assert "line 1" in check.errors[4].reason


def test_check_file_respects_max_errors(five_problems: Path) -> None:
    check = check_file(five_problems, max_errors=2)
    assert (check.n_valid, check.n_invalid) == (2, 5)
    assert [e.line for e in check.errors] == [2, 3]
    assert check_file(five_problems, max_errors=0).errors == []


def test_check_file_on_good_file(tmp_path: Path) -> None:
    check = check_file(write_lines(tmp_path, minimal(id="a"), minimal(id="b"), minimal(id="c")))
    assert (check.n_valid, check.n_invalid, check.ok, check.errors) == (3, 0, True, [])


def test_read_records_skip_invalid_yields_only_good(five_problems: Path) -> None:
    assert [r.id for r in read_records(five_problems, skip_invalid=True)] == ["g1", "g2"]


def test_read_records_raises_first_bad_record(five_problems: Path) -> None:
    records = read_records(five_problems)
    assert next(records).id == "g1"
    with pytest.raises(InputError) as info:
        next(records)
    assert info.value.line == 2


# ---------------------------------------------------------------- 4. MT-RAG


def _mtrag_file(name: str) -> Path:
    return shared_data_file("mtrag", name)


def _rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_mtrag_human_eval_rows_parse() -> None:
    path = _mtrag_file("human_eval_tasks.jsonl")
    rows = _rows(path)
    assert len(rows) == 477
    roles = {"user": "user", "agent": "assistant"}
    for number, row in enumerate(rows, start=1):
        record = record_from_mtrag(row, path=str(path), line=number)
        assert record.id == row["task_id"] and "<::>" in record.id
        assert record.question == row["input"][-1]["text"] and row["input"][-1]["speaker"] == "user"
        assert record.history == tuple(Turn(roles[t["speaker"]], t["text"]) for t in row["input"][:-1])
        assert record.references == tuple(t["text"] for t in row["targets"])
        assert record.answer == row["predictions"][0]["text"]
        assert record.answerability is Answerability(row["answerability"][0])
        assert [c.doc_id for c in record.contexts] == [c["document_id"] for c in row["contexts"]]
        assert record.conversation_id == row["conversation_id"]
        assert record.metadata["model_id"] == row["model_id"]
    first = record_from_mtrag(rows[0], path=str(path), line=1)
    assert first.id == "f0d2873b877409f61da7dbdddd22d279<::>1"
    assert first.question == (
        "I need to do some legal research to be prepared for my oral argument. Can I visit the law library?"
    )
    assert first.history == ()
    assert first.contexts[0].doc_id == "775449d1aa187ec5-11505-13676"
    assert first.contexts[0].title == "Oral Argument - California Appellate Courts"
    assert first.answerability is Answerability.ANSWERABLE


def test_mtrag_human_eval_answerability_counts() -> None:
    path = _mtrag_file("human_eval_tasks.jsonl")
    counts = Counter(record_from_mtrag(row, line=i).answerability for i, row in enumerate(_rows(path), 1))
    assert counts == {
        Answerability.ANSWERABLE: 405,
        Answerability.PARTIAL: 45,
        Answerability.UNANSWERABLE: 21,
        Answerability.CONVERSATIONAL: 6,
    }


def test_mtrag_human_eval_file_loads_all_477() -> None:
    path = _mtrag_file("human_eval_tasks.jsonl")
    assert detect_format(path) == "mtrag"
    check = check_file(path, max_errors=3)
    assert (check.n_valid, check.n_invalid) == (477, 0), [str(e) for e in check.errors]
    records = list(read_records(path))
    assert [r.id for r in records] == [row["task_id"] for row in _rows(path)]


def test_mtrag_sample_responses_load_with_auto_format() -> None:
    path = _mtrag_file("sample_responses-10.jsonl")
    rows = _rows(path)
    assert detect_format(path) == "mtrag"
    records = list(read_records(path, format="auto"))
    assert len(records) == 10
    assert [r.id for r in records] == [row["task_id"] for row in rows]
    assert records[0].id == "dd6b6ffd177f2b311abe676261279d2f::1"
    assert records[0].question == "where do the arizona cardinals play this week"
    assert records[0].contexts == ()
    assert records[0].answerability is Answerability.UNANSWERABLE
    assert records[0].references == ("I'm sorry, but I don't have the answer to your question.",)
    assert records[0].answer.startswith("I do not have specific information about the current schedule")


def _mtrag_row(**extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": "conv7::2",
        "conversation_id": "conv7",
        "model_id": "m1",
        "turn": 2,
        "input": [
            {"speaker": "user", "text": "Who wrote Dune?"},
            {"speaker": "agent", "text": "Frank Herbert."},
            {"speaker": "user", "text": "When was it published?"},
        ],
        "contexts": [{"document_id": "doc-9", "title": "Dune", "text": "Dune was published in 1965."}],
        "targets": [{"speaker": "agent", "text": "In 1965."}],
        "predictions": [{"text": "It was published in 1965 [CIT:doc-9]."}],
    }
    row.update(extra)
    return {k: v for k, v in row.items() if v is not None}


def test_mtrag_hand_made_row_with_capital_answerability(tmp_path: Path) -> None:
    path = write_lines(tmp_path, _mtrag_row(Answerability=["PARTIAL"]))
    assert detect_format(path) == "mtrag"
    record = one_record(path)
    assert record == Record(
        id="conv7::2",
        question="When was it published?",
        answer="It was published in 1965 [CIT:doc-9].",
        contexts=(Chunk("doc-9", "Dune was published in 1965.", "Dune"),),
        references=("In 1965.",),
        history=(Turn("user", "Who wrote Dune?"), Turn("assistant", "Frank Herbert.")),
        answerability=Answerability.PARTIAL,
        metadata={"conversation_id": "conv7", "model_id": "m1", "turn": 2},
    )


def test_mtrag_answerability_as_string_and_default(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        _mtrag_row(task_id="c::1", answerability="UNANSWERABLE"),
        _mtrag_row(task_id="c::2"),
        _mtrag_row(task_id="c::3", targets=[]),
    )
    a, b, c = read_records(path, format="mtrag")
    assert a.answerability is Answerability.UNANSWERABLE
    assert b.answerability is Answerability.ANSWERABLE  # a non-empty target exists
    assert c.answerability is None and c.references == ()


def test_mtrag_row_without_predictions(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        _mtrag_row(task_id="c::1"),
        _mtrag_row(task_id="c::2", predictions=[]),
        {k: v for k, v in _mtrag_row(task_id="c::3").items() if k != "predictions"},
    )
    items = list(iter_records(path, format="mtrag"))
    assert isinstance(items[0], Record)
    assert [(e.line, e.field) for e in items[1:]] == [(2, "predictions"), (3, "predictions")]
    assert str(items[2]).startswith(f"{path}:3 field 'predictions': ")


def test_mtrag_row_without_input(tmp_path: Path) -> None:
    row = {k: v for k, v in _mtrag_row().items() if k != "input"}
    path = write_lines(tmp_path, row)
    assert detect_format(path) == "mtrag"
    err = one_error(path)
    assert (err.path, err.line, err.field) == (str(path), 1, "input")


def test_mtrag_last_turn_must_be_the_user(tmp_path: Path) -> None:
    row = _mtrag_row(input=[{"speaker": "user", "text": "q"}, {"speaker": "agent", "text": "a"}])
    err = one_error(write_lines(tmp_path, row), format="mtrag")
    assert err.field == "input[1].speaker"


def test_mtrag_context_without_document_id(tmp_path: Path) -> None:
    err = one_error(write_lines(tmp_path, _mtrag_row(contexts=[{"text": "t"}])), format="mtrag")
    assert err.field == "contexts[0].document_id"


# ---------------------------------------------------------------- 5. RAGAS rows


def test_ragas_row_gets_positional_doc_ids(tmp_path: Path) -> None:
    row = {
        "user_input": "Where?",
        "retrieved_contexts": ["first chunk", "second chunk"],
        "response": "Here [CIT:2].",
        "reference": "There",
        "session": "s1",
    }
    path = write_lines(tmp_path, row)
    assert detect_format(path) == "ragas"
    assert one_record(path) == Record(
        id="1",
        question="Where?",
        answer="Here [CIT:2].",
        contexts=(Chunk("1", "first chunk"), Chunk("2", "second chunk")),
        references=("There",),
        answerability=Answerability.ANSWERABLE,
        metadata={"session": "s1"},
    )


def test_ragas_row_uses_retrieved_context_ids(tmp_path: Path) -> None:
    row = {
        "id": 9,
        "user_input": "Where?",
        "retrieved_contexts": ["a", "b"],
        "retrieved_context_ids": ["doc-a", 3],
        "response": "r",
    }
    record = one_record(write_lines(tmp_path, row))
    assert record.id == "9"
    assert record.contexts == (Chunk("doc-a", "a"), Chunk("3", "b"))
    assert record.references == () and record.answerability is None


def test_ragas_context_id_length_mismatch(tmp_path: Path) -> None:
    row = {"user_input": "q", "retrieved_contexts": ["a", "b"], "retrieved_context_ids": ["x"], "response": "r"}
    err = one_error(write_lines(tmp_path, row))
    assert (err.line, err.field) == (1, "retrieved_context_ids")
    assert "1 ids for 2 retrieved_contexts" in err.reason


def test_ragas_missing_response(tmp_path: Path) -> None:
    err = one_error(write_lines(tmp_path, {"user_input": "q", "retrieved_contexts": []}))
    assert (err.line, err.field) == (1, "response")


# ---------------------------------------------------------------- 6. CSV / TSV


def test_csv_with_native_column_names(tmp_path: Path) -> None:
    contexts = json.dumps([{"doc_id": "d1", "text": "X is Y.", "title": "T"}, {"doc_id": 2, "text": "Z."}])
    path = write_csv(
        tmp_path,
        [
            ["id", "question", "answer", "contexts", "references", "latency_ms", "action", "answerability"],
            ["r1", "What is X?", "X is Y [CIT:d1].", contexts, json.dumps(["X is Y.", "Y"]), "1234.5", "", ""],
            ["r2", "What is Z?", "Z.", "", "Z", "7", "ABSTAIN", "unanswerable"],
        ],
    )
    assert detect_format(path) == "csv"
    r1, r2 = read_records(path)
    assert r1 == Record(
        id="r1",
        question="What is X?",
        answer="X is Y [CIT:d1].",
        contexts=(Chunk("d1", "X is Y.", "T"), Chunk("2", "Z.")),
        references=("X is Y.", "Y"),
        answerability=Answerability.ANSWERABLE,
        latency_ms=1234.5,
    )
    assert type(r1.latency_ms) is float
    assert r2 == Record(
        id="r2",
        question="What is Z?",
        answer="Z.",
        references=("Z",),
        answerability=Answerability.UNANSWERABLE,
        latency_ms=7.0,
        action="ABSTAIN",
    )


def test_csv_with_column_map(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path,
        [
            ["query", "response_text", "lat_ms", "ctx"],
            ["q1", "a1", "250", json.dumps([{"doc_id": "d", "text": "t"}])],
        ],
    )
    record = one_record(
        path, column_map={"question": "query", "answer": "response_text", "latency_ms": "lat_ms", "contexts": "ctx"}
    )
    assert record == Record(id="2", question="q1", answer="a1", contexts=(Chunk("d", "t"),), latency_ms=250.0)


def test_csv_errors_name_the_mapped_column_and_file_line(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path,
        [
            ["query", "response_text", "lat_ms", "ctx"],  # line 1
            ["q1", "a1", "250", ""],  # line 2 good
            ["q2", "a2", "slow", ""],  # line 3 bad latency
            ["q3", "", "3", ""],  # line 4 empty answer: valid
            ["q4", "a4", "3", '[{"doc_id": "d", "text": '],  # line 5 broken JSON cell
            ["q5", "a5", "3", json.dumps([{"doc_id": "d", "text": "t"}, {"text": "u"}])],  # line 6 chunk w/o doc_id
        ],
    )
    column_map = {"question": "query", "answer": "response_text", "latency_ms": "lat_ms", "contexts": "ctx"}
    check = check_file(path, column_map=column_map)
    assert (check.n_valid, check.n_invalid) == (2, 3)
    assert [(e.line, e.field) for e in check.errors] == [(3, "lat_ms"), (5, "ctx"), (6, "ctx[1].doc_id")]
    assert str(check.errors[0]).startswith(f"{path}:3 field 'lat_ms': ")
    assert "'slow'" in check.errors[0].reason
    assert "broken JSON in this cell" in check.errors[1].reason


def test_csv_line_numbers_count_multiline_cells(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text(
        "question,answer,latency_ms\n"  # 1
        '"two\nlines",a,1\n'  # 2-3
        "q,a,slow\n",
        encoding="utf-8",
    )  # 4
    err = one_error(path)
    assert (err.line, err.field) == (4, "latency_ms")


def test_csv_error_in_multiline_row_names_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text(
        "question,answer,latency_ms\n"  # 1
        '"two\nlines",a,slow\n',
        encoding="utf-8",
    )  # 2-3
    err = one_error(path)
    assert (err.line, err.field) == (2, "latency_ms")


def test_csv_token_columns_become_one_usage_entry(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path,
        [
            ["id", "question", "answer", "prompt_tokens", "completion_tokens"],
            ["a", "q", "x", "120", "30"],
            ["b", "q", "x", "45", ""],
            ["c", "q", "x", "", ""],
        ],
    )
    a, b, c = read_records(path)
    assert a.usage == (Usage(120, 30),)
    assert b.usage == (Usage(45, 0),)
    assert c.usage is None
    assert a.metadata == {}  # the token columns went into usage, not metadata


def test_csv_mapped_token_column(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [["question", "answer", "p_tok"], ["q", "a", "120"]])
    assert one_record(path, column_map={"prompt_tokens": "p_tok"}).usage == (Usage(120, 0),)


def test_csv_bad_token_cell_names_the_csv_column(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [["question", "answer", "p_tok"], ["q", "a", "abc"]])
    err = one_error(path, column_map={"prompt_tokens": "p_tok"})
    assert (err.line, err.field) == (2, "p_tok")


def test_csv_empty_answer_cell_is_an_empty_answer(tmp_path: Path) -> None:
    path = write_csv(tmp_path, [["id", "question", "answer"], ["a", "q", ""]])
    assert one_record(path).answer == ""


def test_csv_with_ragas_column_names(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path,
        [
            ["user_input", "retrieved_contexts", "response", "reference"],
            ["Where?", json.dumps(["first", "second"]), "Here [CIT:1].", "There"],
        ],
    )
    assert one_record(path) == Record(
        id="2",
        question="Where?",
        answer="Here [CIT:1].",
        contexts=(Chunk("1", "first"), Chunk("2", "second")),
        references=("There",),
        answerability=Answerability.ANSWERABLE,
    )


def test_tsv_by_extension(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path,
        [["question", "answer", "latency_ms"], ["q, with comma", "a", "5"]],
        name="records.tsv",
        delimiter="\t",
    )
    assert detect_format(path) == "csv"
    assert one_record(path) == Record(id="2", question="q, with comma", answer="a", latency_ms=5.0)


# ---------------------------------------------------------------- 7. Parquet


def test_parquet_with_list_and_struct_columns(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    chunk = pa.struct([("doc_id", pa.string()), ("text", pa.string()), ("title", pa.string())])
    call = pa.struct([("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64())])
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "question": ["q1", "q2", "q3"],
            "answer": ["a1 [CIT:d1]", None, "a3"],
            "contexts": pa.array(
                [
                    [{"doc_id": "d1", "text": "t1", "title": "T"}, {"doc_id": "d2", "text": "t2", "title": None}],
                    [],
                    None,
                ],
                pa.list_(chunk),
            ),
            "references": pa.array([["r1", "r1b"], ["r2"], None], pa.list_(pa.string())),
            "usage": pa.array(
                [
                    [{"prompt_tokens": 10, "completion_tokens": 2}, {"prompt_tokens": 4, "completion_tokens": 1}],
                    None,
                    None,
                ],
                pa.list_(call),
            ),
            "latency_ms": pa.array([12.5, 3.0, None], pa.float64()),
            "metadata": pa.array([{"run_id": "x"}, {"run_id": "y"}, None], pa.struct([("run_id", pa.string())])),
        }
    )
    path = tmp_path / "records.parquet"
    pq.write_table(table, path)
    assert detect_format(path) == "parquet"
    items = list(iter_records(path))
    assert len(items) == 3
    first, error, third = items
    assert first == Record(
        id="1",
        question="q1",
        answer="a1 [CIT:d1]",
        contexts=(Chunk("d1", "t1", "T"), Chunk("d2", "t2", None)),
        references=("r1", "r1b"),
        answerability=Answerability.ANSWERABLE,
        usage=(Usage(10, 2), Usage(4, 1)),
        latency_ms=12.5,
        metadata={"run_id": "x"},
    )
    assert isinstance(error, InputError)
    assert (error.path, error.line, error.field) == (str(path), 2, "answer")
    assert third == Record(id="3", question="q3", answer="a3")


def test_parquet_row_number_and_column_map(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {"query": ["q1", "q2", "q3"], "resp": ["a1", "a2", "a3"], "lat": pa.array([1.0, -2.0, 3.0], pa.float64())}
    )
    path = tmp_path / "records.pq"
    pq.write_table(table, path)
    assert detect_format(path) == "parquet"
    items = list(iter_records(path, column_map={"question": "query", "answer": "resp", "latency_ms": "lat"}))
    assert [r.id for r in items if isinstance(r, Record)] == ["1", "3"]
    err = items[1]
    assert isinstance(err, InputError)
    assert (err.line, err.field) == (2, "lat")


def test_unreadable_parquet_file(tmp_path: Path) -> None:
    path = tmp_path / "records.parquet"
    path.write_text("not parquet", encoding="utf-8")
    with pytest.raises(InputError, match="Parquet"):
        list(iter_records(path))


# ---------------------------------------------------------------- 8. format detection


def test_detect_format(tmp_path: Path) -> None:
    assert detect_format(write_lines(tmp_path, minimal(), name="native.jsonl")) == "native"
    assert detect_format(write_lines(tmp_path, _mtrag_row(), name="mtrag.jsonl")) == "mtrag"
    ragas = {"user_input": "q", "retrieved_contexts": [], "response": "r"}
    assert detect_format(write_lines(tmp_path, ragas, name="ragas.jsonl")) == "ragas"
    # the first parseable line decides
    assert detect_format(write_lines(tmp_path, "{broken", "", _mtrag_row(), name="late.jsonl")) == "mtrag"
    assert detect_format(write_lines(tmp_path, "", name="blank.jsonl")) == "native"
    for name, kind in [("a.csv", "csv"), ("a.TSV", "csv"), ("a.parquet", "parquet"), ("a.pq", "parquet")]:
        assert detect_format(tmp_path / name) == kind  # by extension, without opening the file
    assert detect_format(DEMO) == "native"


def test_auto_format_reads_ragas_jsonl(tmp_path: Path) -> None:
    ragas = {"user_input": "q", "retrieved_contexts": ["c"], "response": "r"}
    record = one_record(write_lines(tmp_path, ragas))
    assert record.contexts == (Chunk("1", "c"),)
