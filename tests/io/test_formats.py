"""The input-format registry and the one row source (issue 28): a format registered in one place is detected and
read everywhere, and the record reader and the annotation reader word a fault of a file the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.core.errors import InputError
from ragmeter.core.records import Record
from ragmeter.human.annotation_files import read_annotations
from ragmeter.io import check_file, detect_format, iter_records, read_records
from ragmeter.io.formats import FORMATS, REGISTRY, InputFormat, format_help, register
from ragmeter.io.formats.base import jsonl_reader
from ragmeter.io.readers import object_rows, raw_records
from ragmeter.io.rows import NOT_AN_OBJECT


def record_from_qa(obj: Any, *, path: str | None = None, line: int | None = None) -> Record:
    if not isinstance(obj.get("q"), str):
        raise InputError("expected a question text", path=path, line=line, field="q")
    return Record(id=str(line), question=obj["q"], answer=obj.get("a", ""))


def read_qa_lines(path: Path, column_map: Any, span: Any = None) -> Iterator[tuple[int, Record | InputError]]:
    """A plain-text format: ``question | answer`` on each line."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        question, _, answer = line.partition("|")
        yield number, Record(id=f"qa{number}", question=question.strip(), answer=answer.strip())


@pytest.fixture
def registered() -> Iterator[list[InputFormat]]:
    added = [
        register(
            InputFormat(
                "qa-jsonl", "QA JSONL", "rows {q, a}", jsonl_reader(record_from_qa), matches=lambda obj: "q" in obj
            )
        ),
        register(
            InputFormat(
                "qa-text",
                "QA text",
                "lines 'question | answer'",
                read_qa_lines,
                family="qa-text",
                suffixes=(".qa",),
                spans=False,
            )
        ),
    ]
    yield added
    for fmt in added:
        del REGISTRY[fmt.name]


def test_the_formats_are_the_registry_in_order() -> None:
    assert FORMATS == ("auto", "native", "mtrag", "ragas", "csv", "parquet", "otel", "phoenix")
    assert list(REGISTRY) == list(FORMATS[1:])
    assert all(f"{name}: " in format_help() for name in REGISTRY)


def test_a_format_registered_in_one_place_is_detected_and_read(tmp_path: Path, registered: list[InputFormat]) -> None:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(
        json.dumps({"q": "why?", "a": "because"}) + "\n" + json.dumps({"a": "no q"}) + "\n", encoding="utf-8"
    )
    assert detect_format(jsonl) == "qa-jsonl"
    found = list(iter_records(jsonl))
    assert found[0] == Record(id="1", question="why?", answer="because")
    assert isinstance(found[1], InputError) and (found[1].line, found[1].field) == (2, "q")
    assert [number for number, _ in raw_records(jsonl, "qa-jsonl", {})] == [1, 2]

    text = tmp_path / "rows.qa"
    text.write_text("what? | that\nwho? | them\n", encoding="utf-8")
    assert detect_format(text) == "qa-text"
    assert [r.id for r in read_records(text)] == ["qa1", "qa2"]
    assert check_file(text, format="qa-text").n_valid == 2


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered already"):
        register(REGISTRY["csv"])


def annotation_reason(path: Path) -> str:
    read = read_annotations([path], [Record(id="r1", question="q", answer="a")])
    return read.errors[0].reason


def test_a_json_array_file_has_the_same_words_in_both_readers(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('[{"record_id": "r1", "unit": "answer", "helpful": 1}]\n', encoding="utf-8")
    (record_error,) = iter_records(path)
    assert isinstance(record_error, InputError) and "JSON array" in record_error.reason
    assert annotation_reason(path) == record_error.reason


def test_a_line_that_is_not_an_object_has_the_same_words_in_both_readers(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"record_id": "r1", "unit": "answer", "helpful": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(object_rows(path))
    assert (caught.value.line, caught.value.reason) == (2, NOT_AN_OBJECT)
    assert annotation_reason(path) == NOT_AN_OBJECT


def test_unreadable_json_has_the_same_words_in_both_readers(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"record_id": "r1", "unit": "answer", "helpful": ' + "1" * 5000 + "}\n", encoding="utf-8")
    (record_error,) = iter_records(path)
    assert isinstance(record_error, InputError) and record_error.reason.startswith("unreadable JSON")
    assert annotation_reason(path) == record_error.reason
