"""Readers against input as a user's hand makes it (issue 10): byte-order marks, bytes that are not UTF-8,
huge texts and numbers, empty references, a mistyped column mapping, a quote never closed, records built
in code without an id.

Every expected value is worked out by hand from the bytes written in the test (offsets counted in the
comments), or from the documented bound it checks.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragmeter.core.errors import InputError
from ragmeter.core.records import Answerability, Record, Usage
from ragmeter.io import check_file, detect_format, iter_records, read_records, record_from_dict
from ragmeter.io.fields import MAX_CHUNKS, MAX_LATENCY_MS, MAX_TEXT_CHARS, MAX_TOKENS_PER_CALL
from ragmeter.io.qrels import read_qrels
from ragmeter.metrics import get_metric

BOM = "\ufeff"


def write_jsonl(tmp_path: Path, *objs: Any, name: str = "records.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(obj) + "\n" for obj in objs), encoding="utf-8")
    return path


def items(path: Path, **kw: Any) -> list[Record | InputError]:
    return list(iter_records(path, **kw))


def only_record(path: Path, **kw: Any) -> Record:
    found = items(path, **kw)
    assert len(found) == 1 and isinstance(found[0], Record), found
    return found[0]


def only_error(path: Path, **kw: Any) -> InputError:
    found = items(path, **kw)
    assert len(found) == 1 and isinstance(found[0], InputError), found
    return found[0]


def minimal(**extra: Any) -> dict[str, Any]:
    return {"question": "q", "answer": "a", **extra}


MTRAG_ROW = {
    "task_id": "c<::>1",
    "input": [{"speaker": "user", "text": "q"}],
    "contexts": [{"document_id": "d", "text": "t"}],
    "targets": [{"text": "ref"}],
    "predictions": [{"text": "a"}],
}
RAGAS_ROW = {"id": "g1", "user_input": "q", "retrieved_contexts": ["t"], "response": "a", "reference": "ref"}


# ---------------------------------------------------------------- 1. byte-order marks


def test_csv_with_byte_order_mark_keeps_its_id_column(tmp_path: Path) -> None:
    # Excel's "CSV UTF-8" starts the file with EF BB BF; before the fix the first column was named "\ufeffid",
    # so every record lost its id (it became the line number) and gained a metadata key.
    path = tmp_path / "records.csv"
    path.write_text(BOM + "id,question,answer\nr1,q,a\n", encoding="utf-8")
    assert path.read_bytes()[:3] == b"\xef\xbb\xbf"
    assert only_record(path) == Record(id="r1", question="q", answer="a")


@pytest.mark.parametrize(
    ("row", "flavour", "expected_id"),
    [(minimal(id="n1"), "native", "n1"), (MTRAG_ROW, "mtrag", "c<::>1"), (RAGAS_ROW, "ragas", "g1")],
)
def test_jsonl_with_byte_order_mark_reads_its_first_record(
    tmp_path: Path, row: dict[str, Any], flavour: str, expected_id: str
) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(BOM + json.dumps(row) + "\n", encoding="utf-8")
    assert detect_format(path) == flavour
    assert only_record(path).id == expected_id


def test_byte_order_mark_is_dropped_only_at_the_start_of_the_file(tmp_path: Path) -> None:
    # U+FEFF inside a string, written raw (not as an escape), is text and is kept
    path = tmp_path / "records.jsonl"
    path.write_text(BOM + json.dumps(minimal(answer=BOM + "x"), ensure_ascii=False) + "\n", encoding="utf-8")
    assert path.read_bytes().count(b"\xef\xbb\xbf") == 2
    assert only_record(path).answer == BOM + "x"


def test_qrels_with_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text(BOM + "q1 0 d1 2\nq1 0 d2 0\n", encoding="utf-8")
    assert read_qrels(path) == {"q1": {"d1": 2, "d2": 0}}


# ---------------------------------------------------------------- 2. bytes that are not UTF-8


@pytest.fixture
def latin1_line_3(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    # line 3: {"id": "c", "question": "caf\xe9" ... ; the bytes before \xe9 are
    # {"id": "c", "question": "caf  = 1+4+2+3+2+10+2+4 = 28, so \xe9 is byte 29 of the line
    path.write_bytes(
        b'{"id": "a", "question": "q", "answer": "a"}\n'
        b'{"id": "b", "question": "q", "answer": "a"}\n'
        b'{"id": "c", "question": "caf\xe9", "answer": "a"}\n'
        b'{"id": "d", "question": "q", "answer": "a"}\n'
    )
    assert path.read_bytes().split(b"\n")[2].index(b"\xe9") == 28
    return path


def test_not_utf8_is_an_error_of_its_line_naming_the_byte(latin1_line_3: Path) -> None:
    found = items(latin1_line_3)
    assert [type(i) for i in found] == [Record, Record, InputError, Record]
    err = found[2]
    assert (err.path, err.line, err.field) == (str(latin1_line_3), 3, None)
    assert err.reason == "not UTF-8 text at line 3, byte 29 of the line (0xe9): save the file as UTF-8"
    assert str(err).startswith(f"{latin1_line_3}:3: ")


def test_not_utf8_line_is_one_invalid_record_and_can_be_skipped(latin1_line_3: Path) -> None:
    check = check_file(latin1_line_3)
    assert (check.n_valid, check.n_invalid, check.file_error) == (3, 1, None)
    assert [r.id for r in read_records(latin1_line_3, skip_invalid=True)] == ["a", "b", "d"]
    with pytest.raises(InputError, match="line 3, byte 29"):
        list(read_records(latin1_line_3))


def test_not_utf8_byte_after_a_byte_order_mark_is_counted_after_it(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    # after the BOM: {"question": "  is 14 bytes, so \xff is byte 15
    path.write_bytes(b'\xef\xbb\xbf{"question": "\xff", "answer": "a"}\n')
    err = only_error(path)
    assert err.line == 1
    assert err.reason == "not UTF-8 text at line 1, byte 15 of the line (0xff): save the file as UTF-8"


def test_not_utf8_in_csv_rows(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_bytes(
        b"id,question,answer\n"  # 1
        b"a,q,x\n"  # 2
        b"b,caf\xe9,x\n"  # 3: \xe9 is byte 6 (b , c a f)
        b'c,"two\n'  # 4: a quoted cell over lines 4-5,
        b'lines \x96 here",x\n'  # 5: cp1252's en dash is byte 7 of line 5
        b"d,q,x\n"
    )  # 6
    found = items(path)
    assert [type(i) for i in found] == [Record, InputError, InputError, Record]
    assert [(e.line, e.reason) for e in found if isinstance(e, InputError)] == [
        (3, "not UTF-8 text at line 3, byte 6 of the line (0xe9): save the file as UTF-8"),
        (5, "not UTF-8 text at line 5, byte 7 of the line (0x96): save the file as UTF-8"),
    ]
    assert [r.id for r in read_records(path, skip_invalid=True)] == ["a", "d"]


def test_not_utf8_in_csv_header_is_a_file_error(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_bytes(b"id,qu\xe9stion,answer\na,q,x\n")  # \xe9 is byte 6 of line 1
    check = check_file(path)
    assert check.file_error is not None and (check.n_valid, check.n_invalid) == (0, 0)
    assert check.file_error.line is None
    assert check.file_error.reason.startswith("not UTF-8 text at line 1, byte 6 of the line (0xe9)")


def test_not_utf8_in_qrels_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q1 0 d1 2\nq1 0 d\xe92 1\n")  # line 2: "q1 0 d" is 6 bytes, \xe9 is byte 7
    with pytest.raises(InputError) as info:
        read_qrels(path)
    assert (info.value.line, info.value.reason) == (
        2,
        "not UTF-8 text at line 2, byte 7 of the line (0xe9): save the file as UTF-8",
    )


def test_lone_carriage_returns_still_end_lines(tmp_path: Path) -> None:
    # old Mac line ends: binary reading must split lines as text mode did
    path = tmp_path / "records.jsonl"
    path.write_bytes(json.dumps(minimal(id="a")).encode() + b"\r" + json.dumps(minimal(id="b")).encode() + b"\r")
    assert [r.id for r in read_records(path)] == ["a", "b"]
    csv_path = tmp_path / "records.csv"
    csv_path.write_bytes(b"id,question,answer\rr1,q,a\rr2,q,b\r")
    assert [(r.id, r.answer) for r in read_records(csv_path)] == [("r1", "a"), ("r2", "b")]


# ---------------------------------------------------------------- 3. what one record may hold


def test_the_bounds_are_the_documented_ones() -> None:
    assert MAX_TEXT_CHARS == 1_000_000
    assert MAX_CHUNKS == 10_000
    assert MAX_TOKENS_PER_CALL == 10**9
    assert MAX_LATENCY_MS == 604_800_000  # 7 days × 24 h × 3600 s × 1000 ms


LONG = "x" * 1_000_001
LIMIT = 1_000_000


TEXT_CASES = [
    (minimal(question=LONG), "question"),
    (minimal(answer=LONG), "answer"),
    (minimal(references=["ok", LONG]), "references[1]"),
    (minimal(reference=LONG), "reference"),
    (minimal(contexts=[{"doc_id": "d", "text": LONG}]), "contexts[0].text"),
    (minimal(contexts=[{"doc_id": "d", "text": "t", "title": LONG}]), "contexts[0].title"),
    (minimal(history=[{"role": "user", "text": LONG}]), "history[0].text"),
    ({**MTRAG_ROW, "predictions": [{"text": LONG}]}, "predictions[0].text"),
    ({**MTRAG_ROW, "targets": [{"text": LONG}]}, "targets[0].text"),
    ({**MTRAG_ROW, "input": [{"speaker": "user", "text": LONG}]}, "input[0].text"),
    ({**RAGAS_ROW, "response": LONG}, "response"),
    ({**RAGAS_ROW, "retrieved_contexts": [LONG]}, "retrieved_contexts[0]"),
]


@pytest.mark.parametrize(("row", "field"), TEXT_CASES, ids=[field for _, field in TEXT_CASES])
def test_a_text_over_a_million_characters_is_refused(tmp_path: Path, row: dict[str, Any], field: str) -> None:
    err = only_error(write_jsonl(tmp_path, row))
    assert (err.line, err.field) == (1, field)
    assert "1,000,001 characters" in err.reason and "1,000,000" in err.reason


def test_a_text_of_exactly_a_million_characters_is_read(tmp_path: Path) -> None:
    assert len(only_record(write_jsonl(tmp_path, minimal(answer="y" * LIMIT))).answer) == LIMIT


@pytest.fixture
def python_default_csv_limit() -> Any:
    """Python's own CSV cell limit (131,072 characters) for the test, as a fresh interpreter has it."""
    before = csv.field_size_limit(131_072)
    yield
    csv.field_size_limit(before)


@pytest.mark.usefixtures("python_default_csv_limit")
def test_a_csv_cell_past_pythons_limit_is_read_by_every_reader(tmp_path: Path) -> None:
    """A 200,000-character cell (an annotation template's chunk text can be that long): the records' reader,
    ``agree``'s and ``calibrate-tau``'s rows read it whole."""
    from ragmeter.analysis.calibration import read_labelled
    from ragmeter.io.readers import object_rows

    text = "z" * 200_000
    records = tmp_path / "records.csv"
    records.write_text(f'question,answer\nq,"{text}"\n', encoding="utf-8")
    assert only_record(records).answer == text
    rows = tmp_path / "human.csv"
    rows.write_text(f'id,text,ok\nq1,"{text}",1\n', encoding="utf-8")
    assert [row["text"] for _, row in object_rows(rows)] == [text]
    labelled = tmp_path / "labelled.csv"
    labelled.write_text(f'sentence,chunk,label\ns,"{text}",1\n', encoding="utf-8")
    assert [pair.chunk for pair in read_labelled(labelled)] == [text]


@pytest.mark.parametrize(
    ("row", "field"),
    [
        (minimal(contexts=[{"doc_id": str(i), "text": "t"} for i in range(10_001)]), "contexts"),
        ({**MTRAG_ROW, "contexts": [{"document_id": str(i), "text": "t"} for i in range(10_001)]}, "contexts"),
        ({**RAGAS_ROW, "retrieved_contexts": ["t"] * 10_001}, "retrieved_contexts"),
    ],
    ids=["native", "mtrag", "ragas"],
)
def test_more_than_ten_thousand_chunks_is_refused(tmp_path: Path, row: dict[str, Any], field: str) -> None:
    err = only_error(write_jsonl(tmp_path, row))
    assert (err.line, err.field) == (1, field)
    assert "10,001 chunks" in err.reason and "10,000" in err.reason


def test_ten_thousand_chunks_are_read(tmp_path: Path) -> None:
    row = minimal(contexts=[{"doc_id": str(i), "text": "t"} for i in range(10_000)])
    assert len(only_record(write_jsonl(tmp_path, row)).contexts) == 10_000


# ---------------------------------------------------------------- 4. implausible numbers


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        ({"prompt_tokens": 1e30}, "usage.prompt_tokens"),
        ({"prompt_tokens": 2**63}, "usage.prompt_tokens"),
        ([{"prompt_tokens": 1}, {"completion_tokens": 1_000_000_001}], "usage[1].completion_tokens"),
    ],
)
def test_token_counts_over_a_billion_are_refused(tmp_path: Path, usage: Any, field: str) -> None:
    err = only_error(write_jsonl(tmp_path, minimal(usage=usage)))
    assert (err.line, err.field) == (1, field)
    assert "1,000,000,000 (tokens per call)" in err.reason


def test_a_billion_tokens_is_read(tmp_path: Path) -> None:
    record = only_record(write_jsonl(tmp_path, minimal(usage={"prompt_tokens": 10**9, "completion_tokens": 0})))
    assert record.usage == (Usage(10**9, 0),)


@pytest.mark.parametrize("latency", [1e308, 604_800_001])
def test_latency_over_seven_days_is_refused(tmp_path: Path, latency: float) -> None:
    err = only_error(write_jsonl(tmp_path, minimal(latency_ms=latency)))
    assert (err.line, err.field) == (1, "latency_ms")
    assert "604,800,000 (7 days in ms)" in err.reason


@pytest.mark.parametrize(
    ("row", "field", "found"),
    [
        (minimal(latency_ms=604_800_001), "latency_ms", "found 604,800,001:"),
        (minimal(latency_ms=604_800_000.5), "latency_ms", "found 604,800,000.5:"),
        (minimal(latency_ms=604_800_001.0), "latency_ms", "found 604,800,001:"),
        (minimal(latency_ms=1e308), "latency_ms", "found 1e+308:"),
        (minimal(usage={"prompt_tokens": 1_000_000_001}), "usage.prompt_tokens", "found 1,000,000,001:"),
    ],
    ids=["int", "fraction", "whole float", "huge", "tokens"],
)
def test_a_value_just_past_a_bound_is_printed_apart_from_it(
    tmp_path: Path, row: dict[str, Any], field: str, found: str
) -> None:
    # six significant digits printed 604,800,001 as 6.048e+08, which reads as the bound itself
    err = only_error(write_jsonl(tmp_path, row))
    assert err.field == field and found in err.reason


def test_a_csv_token_count_just_past_the_bound_is_printed_apart_from_it(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("question,answer,prompt_tokens\nq,a,1000000001\n", encoding="utf-8")
    err = only_error(path)
    assert err.reason.startswith("expected a whole number ≤ 1,000,000,000 (tokens per call), found 1,000,000,001:")


def test_latency_of_seven_days_is_read(tmp_path: Path) -> None:
    assert only_record(write_jsonl(tmp_path, minimal(latency_ms=604_800_000))).latency_ms == 604_800_000.0


def test_integers_with_hundreds_of_digits_are_errors_not_crashes(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    huge = "9" * 400
    path.write_text(
        f'{{"question": "q", "answer": "a", "latency_ms": {huge}}}\n'
        f'{{"question": "q", "answer": "a", "latency_ms": {"9" * 5000}}}\n',
        encoding="utf-8",
    )
    first, second = items(path)
    assert isinstance(first, InputError) and (first.line, first.field) == (1, "latency_ms")
    assert "400 digits" in first.reason
    assert isinstance(second, InputError) and (second.line, second.field) == (2, None)
    assert "unreadable JSON" in second.reason


def test_csv_token_columns_are_bounded_too(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text(
        "question,answer,prompt_tokens,completion_tokens\n"
        "q,a,1e30,1\n"  # 2: over the bound
        "q,a,5,9223372036854775808\n"  # 3: 2**63
        "q,a,inf,1\n"  # 4: not a whole number (was an OverflowError)
        "q,a,nan,1\n"  # 5: not a whole number (was a ValueError)
        "q,a,1000000000,1\n",  # 6: the bound itself
        encoding="utf-8",
    )
    found = items(path)
    errors = [(e.line, e.field) for e in found if isinstance(e, InputError)]
    assert errors == [(2, "prompt_tokens"), (3, "completion_tokens"), (4, "prompt_tokens"), (5, "prompt_tokens")]
    assert "1,000,000,000 (tokens per call)" in found[0].reason  # type: ignore[union-attr]
    assert isinstance(found[4], Record) and found[4].usage == (Usage(10**9, 1),)


# ---------------------------------------------------------------- 5. an empty reference is no reference


@pytest.mark.parametrize(
    ("extra", "references"),
    [
        ({"references": [""]}, ()),
        ({"references": ["  ", "\t\n"]}, ()),
        ({"reference": ""}, ()),
        ({"reference": " "}, ()),
        ({"references": ["", "Paris", " "]}, ("Paris",)),
    ],
)
def test_native_empty_references_are_dropped(
    tmp_path: Path, extra: dict[str, Any], references: tuple[str, ...]
) -> None:
    record = only_record(write_jsonl(tmp_path, minimal(**extra)))
    assert record.references == references


def test_empty_reference_makes_reference_metrics_undefined(tmp_path: Path) -> None:
    record = only_record(write_jsonl(tmp_path, minimal(references=[""])))
    assert record.answerability is None
    for name in ("exact_match", "token_f1"):
        assert get_metric(name).missing_field(record) == "record has no reference answer"


def test_ragas_empty_reference_is_dropped(tmp_path: Path) -> None:
    record = only_record(write_jsonl(tmp_path, {**RAGAS_ROW, "reference": "  "}))
    assert (record.references, record.answerability) == ((), None)


def test_mtrag_empty_targets_are_dropped(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path,
        {**MTRAG_ROW, "task_id": "c<::>1", "targets": [{"text": ""}, {"text": "ref"}]},
        {**MTRAG_ROW, "task_id": "c<::>2", "targets": [{"text": " "}]},
    )
    first, second = read_records(path)
    assert (first.references, first.answerability) == (("ref",), Answerability.ANSWERABLE)
    assert (second.references, second.answerability) == ((), None)


def test_csv_blank_reference_cells_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(
            [
                ["id", "question", "answer", "references"],
                ["a", "q", "x", "   "],
                ["b", "q", "x", json.dumps(["", "y"])],
                ["c", "q", "x", json.dumps([" "])],
            ]
        )
    assert [(r.id, r.references) for r in read_records(path)] == [("a", ()), ("b", ("y",)), ("c", ())]


# ---------------------------------------------------------------- 6. column mapping and quoting in CSV


def test_mapped_column_the_header_lacks_is_one_file_error(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("id,query,answer\na,q,x\nb,q,y\nc,q,z\n", encoding="utf-8")
    found = items(path, column_map={"question": "qeury"})
    assert len(found) == 1 and isinstance(found[0], InputError)
    err = found[0]
    assert (err.path, err.line, err.field) == (str(path), None, None)
    assert err.reason == (
        "field 'question' is mapped to column 'qeury', which the file lacks (did you mean "
        "'query'?). The file's columns are: 'id', 'query', 'answer'"
    )
    check = check_file(path, column_map={"question": "qeury"})
    assert (check.n_valid, check.n_invalid, str(check.file_error)) == (0, 0, str(err))
    with pytest.raises(InputError, match="qeury"):  # skipping would drop every row unseen
        list(read_records(path, column_map={"question": "qeury"}, skip_invalid=True))


def test_several_missing_mapped_columns_are_named_in_one_error(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("q,a\nx,y\n", encoding="utf-8")
    err = only_error(path, column_map={"question": "nosuchcolumn", "answer": "a", "latency_ms": "ms"})
    assert err.reason == (
        "field 'question' is mapped to column 'nosuchcolumn', which the file lacks; field "
        "'latency_ms' is mapped to column 'ms', which the file lacks. The file's columns are: "
        "'q', 'a'"
    )


def test_parquet_mapped_column_the_file_lacks_is_one_file_error(tmp_path: Path) -> None:
    path = tmp_path / "records.parquet"
    pq.write_table(pa.table({"query": ["q1", "q2"], "answer": ["a1", "a2"]}), path)
    err = only_error(path, column_map={"question": "querry"})
    assert err.line is None and "column 'querry'" in err.reason and "did you mean 'query'?" in err.reason


def test_unclosed_quote_names_the_line_of_its_row(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text(
        "id,question,answer\n"  # 1
        "a,q,x\n"  # 2
        'b,q,"never closed\n'  # 3: the quote opens here
        "c,q,y\n"  # 4
        "d,q,z\n",
        encoding="utf-8",
    )  # 5
    found = items(path)
    assert [type(i) for i in found] == [Record, InputError]
    err = found[1]
    assert (err.path, err.line) == (str(path), None)  # of the whole file: rows 4 and 5 were swallowed
    assert err.reason.startswith(
        "a quoted cell in the row at line 3 is never closed, so lines 3 to 5 (the end "
        "of the file) were read as one cell"
    )
    check = check_file(path)
    assert (check.n_valid, str(check.file_error)) == (1, str(err))
    with pytest.raises(InputError, match="line 3 is never closed"):
        list(read_records(path, skip_invalid=True))


def test_text_after_a_closing_quote_is_an_error_of_its_row(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text('id,question,answer\na,q,"x"y\nb,q,z\n', encoding="utf-8")
    found = items(path)
    assert [type(i) for i in found] == [InputError, Record]
    assert found[0].line == 2 and "broken quoting" in found[0].reason  # type: ignore[union-attr]
    assert found[1] == Record(id="b", question="q", answer="z")


def test_quotes_written_as_csv_writes_them_still_read(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([["id", "question", "answer"], ["a", 'say "hi"', 'two\n"lines"'], ["b", "q", "z"]])
    assert [(r.id, r.question, r.answer) for r in read_records(path)] == [
        ("a", 'say "hi"', 'two\n"lines"'),
        ("b", "q", "z"),
    ]


# ---------------------------------------------------------------- 9. an id for a record built in code


def test_record_without_id_or_line_gets_its_content_hash() -> None:
    # the canonical JSON of {"question": "q", "answer": "a"}, keys sorted and no spaces, written by hand
    expected = "sha256:" + hashlib.sha256(b'{"answer":"a","question":"q"}').hexdigest()[:12]
    assert record_from_dict({"question": "q", "answer": "a"}).id == expected
    assert record_from_dict({"answer": "a", "question": "q"}).id == expected  # key order does not matter
    assert record_from_dict({"question": "q", "answer": "b"}).id != expected
    non_ascii = "sha256:" + hashlib.sha256('{"answer":"é","question":"q"}'.encode()).hexdigest()[:12]
    assert record_from_dict({"question": "q", "answer": "é"}).id == non_ascii


def test_record_id_from_line_or_field_is_kept() -> None:
    assert record_from_dict({"question": "q", "answer": "a"}, line=7).id == "7"
    assert record_from_dict({"id": "x", "question": "q", "answer": "a"}).id == "x"


def test_empty_csv_with_a_column_map_says_it_holds_no_records(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("", encoding="utf-8")
    assert only_error(path, column_map={"question": "query"}).reason == "the file holds no records"
