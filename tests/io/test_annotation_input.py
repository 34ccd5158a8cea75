"""Annotation files as a user's hand and spreadsheet leave them: cells that look like formulas, byte-order
marks, other encodings and binary files, files without rows, unclosed quotes, and template paths that
cannot hold a template.

Every expected value (file text, line, vote) is written out by hand from the records in the test.
"""

from __future__ import annotations

import csv
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from label_records import RECORDS

from ragmeter import read_records
from ragmeter.cli import main
from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Record
from ragmeter.human.annotation_files import read_annotations, write_template
from ragmeter.io.formats.native import record_from_dict

Capsys = pytest.CaptureFixture[str]

NO_ROWS = "the file holds no rows: fill in the template and save it"
UNCLOSED = 'a quoted cell in the row that starts on this line is never closed: add its closing quote (")'
HEADER = "annotator,record_id,model_id,unit,rank,doc_id,question,text"
LABELS = ("helpful", "topically_relevant")

# Cells a spreadsheet would run as formulas: an id "-1", a doc_id "=HYPERLINK(...)", a question "+cmd",
# a chunk text "@SUM(A1)", an answer that starts with a tab (and the annotator "@bob" of the test).
# The second record's id starts with the user's own quote before "-": its cell gets a second quote.
# Its question and answer hold "=", "-" and "'" after the first character: left as they are.
FORMULA_RECORDS: list[dict[str, Any]] = [
    {
        "id": "-1",
        "question": "+cmd",
        "answer": "\tindented answer",
        "contexts": [{"doc_id": '=HYPERLINK("x")', "text": "@SUM(A1)"}],
    },
    {"id": "'-2", "question": "a = b?", "answer": "it's fine - really"},
]
# What the template's CSV rows read, by hand (the excel dialect quotes a cell holding '"' and doubles it).
FORMULA_CSV = (
    "annotator,record_id,model_id,unit,rank,doc_id,question,text,helpful,topically_relevant\r\n"
    "'@bob,'-1,,answer,,,'+cmd,'\tindented answer,,n/a\r\n"
    '\'@bob,\'-1,,chunk,1,"\'=HYPERLINK(""x"")",\'+cmd,\'@SUM(A1),n/a,\r\n'
    "'@bob,''-2,,answer,,,a = b?,it's fine - really,,n/a\r\n"
)
# The same as TSV: the answer cell holds the delimiter (a tab), so it is quoted too.
FORMULA_TSV = (
    "annotator\trecord_id\tmodel_id\tunit\trank\tdoc_id\tquestion\ttext\t"
    "helpful\ttopically_relevant\r\n"
    "'@bob\t'-1\t\tanswer\t\t\t'+cmd\t\"'\tindented answer\"\t\tn/a\r\n"
    '\'@bob\t\'-1\t\tchunk\t1\t"\'=HYPERLINK(""x"")"\t\'+cmd\t\'@SUM(A1)\tn/a\t\r\n'
    "'@bob\t''-2\t\tanswer\t\t\ta = b?\tit's fine - really\t\tn/a\r\n"
)
# helpful 1 on both answers, topically_relevant 0 on the one chunk, keyed by the original ids
FORMULA_VOTES = {
    ("-1", "", 0): {"helpful": {"@bob": 1}},
    ("-1", "", 1): {"topically_relevant": {"@bob": 0}},
    ("'-2", "", 0): {"helpful": {"@bob": 1}},
}


@pytest.fixture
def records() -> list[Record]:
    return [record_from_dict(obj) for obj in RECORDS]


@pytest.fixture
def formula_records() -> list[Record]:
    return [record_from_dict(obj) for obj in FORMULA_RECORDS]


def fill_template(template: Path, output: Path, *, encoding: str = "utf-8") -> Path:
    """Copy a CSV/TSV template cell by cell (as a spreadsheet keeps text), with every empty label cell
    set to 1 on answer rows and 0 on chunk rows."""
    delimiter = "\t" if template.suffix == ".tsv" else ","
    with template.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        header, rows = list(reader.fieldnames or []), list(reader)
    for row in rows:
        for name in LABELS:
            if row.get(name) == "":
                row[name] = "1" if row["unit"] == "answer" else "0"
    with output.open("w", encoding=encoding, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return output


def helpful_csv(values: tuple[str, str, str], questions: tuple[str, str, str] = ("q", "q", "q")) -> str:
    """A filled helpful-only CSV of RECORDS' three answers, written by hand: one line per row."""
    rows = [
        f"ann,{rid},,answer,,,{question},a,{value}"
        for rid, question, value in zip(("r1", "r2", "r3"), questions, values, strict=True)
    ]
    return "\n".join([f"{HEADER},helpful", *rows]) + "\n"


def missing_row(record_id: str) -> str:
    return f"no row for record {record_id!r} answer by annotator 'ann': every template row needs a row"


def problems(read: Any) -> list[tuple[Any, ...]]:
    return [(e.path, e.line, e.field, e.reason) for e in read.errors]


def run_cli(capsys: Capsys, *argv: Any) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------- formula injection


@pytest.mark.parametrize(("name", "expected"), [("t.csv", FORMULA_CSV), ("t.tsv", FORMULA_TSV)])
def test_template_cells_that_start_like_a_formula_get_a_quote(
    tmp_path: Path, formula_records: list[Record], name: str, expected: str
) -> None:
    path = tmp_path / name
    assert write_template(formula_records, path, LABELS, annotator="@bob") == 3
    assert path.read_bytes().decode("utf-8") == expected


@pytest.mark.parametrize("name", ["t.csv", "t.tsv"])
def test_quoted_cells_read_back_as_the_original_ids(tmp_path: Path, formula_records: list[Record], name: str) -> None:
    template = tmp_path / name
    write_template(formula_records, template, LABELS, annotator="@bob")
    filled = fill_template(template, tmp_path / f"filled{template.suffix}")
    assert "'-1" in filled.read_text(encoding="utf-8")  # the copy keeps the quoted cells
    read = read_annotations([filled], formula_records)
    assert problems(read) == []
    assert read.annotators == {"@bob": str(filled)}
    assert read.votes == FORMULA_VOTES


def test_a_cell_whose_quote_a_spreadsheet_dropped_is_read_as_it_is(
    tmp_path: Path, formula_records: list[Record]
) -> None:
    # An editor that took the added quote as its own text prefix saves the bare cells.
    path = tmp_path / "filled.csv"
    path.write_text(
        "annotator,record_id,model_id,unit,rank,doc_id,question,text,topically_relevant\n"
        '@bob,-1,,chunk,1,"=HYPERLINK(""x"")",+cmd,@SUM(A1),1\n',
        encoding="utf-8",
    )
    read = read_annotations([path], formula_records[:1])
    assert problems(read) == []
    assert read.votes == {("-1", "", 1): {"topically_relevant": {"@bob": 1}}}


def test_a_quote_before_a_plain_word_is_the_annotators_own(tmp_path: Path) -> None:
    records = [record_from_dict({"id": "'q1", "question": "q", "answer": "a"})]
    path = tmp_path / "ann.csv"
    path.write_text(f"{HEADER},helpful\n'ann,'q1,,answer,,,q,a,1\n", encoding="utf-8")
    read = read_annotations([path], records)
    assert problems(read) == []
    assert read.votes == {("'q1", "", 0): {"helpful": {"'ann": 1}}}


def test_jsonl_template_keeps_formula_like_text_as_it_is(tmp_path: Path, formula_records: list[Record]) -> None:
    path = tmp_path / "t.jsonl"
    write_template(formula_records, path, LABELS, annotator="@bob")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(r["annotator"], r["record_id"], r["doc_id"], r["question"], r["text"]) for r in rows] == [
        ("@bob", "-1", "", "+cmd", "\tindented answer"),
        ("@bob", "-1", '=HYPERLINK("x")', "+cmd", "@SUM(A1)"),
        ("@bob", "'-2", "", "a = b?", "it's fine - really"),
    ]


def test_cli_template_fill_merge_with_formula_like_ids(capsys: Capsys, tmp_path: Path) -> None:
    records = write_jsonl(tmp_path / "records.jsonl", FORMULA_RECORDS)
    template = tmp_path / "t.csv"
    code, _, err = run_cli(
        capsys, "labels", "template", records, "-o", template, "--labels", ",".join(LABELS), "--annotator", "@bob"
    )
    assert code == 0, err
    assert template.read_bytes().decode("utf-8") == FORMULA_CSV
    filled = fill_template(template, tmp_path / "bob.csv")
    merged = tmp_path / "merged.jsonl"
    code, _, err = run_cli(capsys, "labels", "merge", records, filled, "-o", merged)
    assert code == 0, err
    first, second = read_records(merged)
    assert (first.id, first.labels["helpful"], first.contexts[0].labels["topically_relevant"]) == ("-1", 1, 0)
    assert first.contexts[0].doc_id == '=HYPERLINK("x")'
    assert (second.id, second.labels["helpful"]) == ("'-2", 1)


# ---------------------------------------------------------------- encodings


@pytest.mark.parametrize("name", ["excel.csv", "excel.tsv", "excel.jsonl"])
def test_a_byte_order_mark_is_read_past(tmp_path: Path, records: list[Record], name: str) -> None:
    path = tmp_path / name
    if path.suffix == ".jsonl":
        rows = [
            {"annotator": "ann", "record_id": rid, "unit": "answer", "helpful": value}
            for rid, value in (("r1", 1), ("r2", 0), ("r3", 1))
        ]
        text = "".join(json.dumps(row) + "\n" for row in rows)
    else:
        text = helpful_csv(("1", "0", "1"))
        if path.suffix == ".tsv":
            text = text.replace(",", "\t")
    path.write_text(text, encoding="utf-8-sig")  # what Excel's "CSV UTF-8" writes
    assert path.read_bytes()[:3] == b"\xef\xbb\xbf"
    read = read_annotations([path], records)
    assert problems(read) == []
    assert read.votes == {
        ("r1", "", 0): {"helpful": {"ann": 1}},
        ("r2", "", 0): {"helpful": {"ann": 0}},
        ("r3", "", 0): {"helpful": {"ann": 1}},
    }


@pytest.mark.parametrize(
    ("encoding", "questions", "line", "byte"),
    [
        ("latin-1", ("q", "Café?", "q"), 3, "0xe9"),  # é is 0xE9 in Latin-1, on r2's line
        ("cp1252", ("q", "q", "Who’s?"), 4, "0x92"),  # ’ is 0x92 in cp1252, on r3's line
    ],
)
def test_a_file_in_another_encoding_names_its_line(
    tmp_path: Path, records: list[Record], encoding: str, questions: tuple[str, str, str], line: int, byte: str
) -> None:
    path = tmp_path / "ann.csv"
    path.write_bytes(helpful_csv(("1", "0", "1"), questions).encode(encoding))
    read = read_annotations([path], records)
    reason = f'byte {byte} is not UTF-8 (a Latin-1 or cp1252 file?): save it as "CSV UTF-8"'
    assert problems(read) == [(str(path), line, None, reason)]
    assert read.votes == {}


def test_a_jsonl_in_another_encoding_is_told_to_be_utf8(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "ann.jsonl"
    path.write_bytes(
        b'{"record_id": "r1", "unit": "answer", "helpful": 1}\n'
        b'{"record_id": "r2", "unit": "answer", "helpful": 1, "annotator": "Ren\xe9"}\n'
    )
    read = read_annotations([path], records)
    reason = "byte 0xe9 is not UTF-8 (a Latin-1 or cp1252 file?): save it as UTF-8 text"
    assert problems(read) == [(str(path), 2, None, reason)]


def test_a_workbook_renamed_csv_is_not_a_text_file(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "ann.csv"
    with zipfile.ZipFile(path, "w") as workbook:  # an .xlsx is a ZIP archive
        workbook.writestr("[Content_Types].xml", "<Types/>")
    read = read_annotations([path], records)
    reason = 'not a text file (it holds NUL bytes; a spreadsheet workbook?): save it as "CSV UTF-8"'
    assert problems(read) == [(str(path), None, None, reason)]


def test_utf16_text_is_named(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "ann.tsv"
    # Excel's "Unicode Text": UTF-16 with a byte-order mark
    path.write_text(helpful_csv(("1", "0", "1")).replace(",", "\t"), encoding="utf-16")
    read = read_annotations([path], records)
    assert problems(read) == [(str(path), None, None, "the file is UTF-16 text: save it as UTF-8 text")]


def test_cli_merge_of_a_cp1252_file_is_a_message(capsys: Capsys, tmp_path: Path) -> None:
    records = write_jsonl(tmp_path / "records.jsonl", RECORDS)
    path = tmp_path / "ann.csv"
    path.write_bytes(helpful_csv(("1", "0", "1"), ("q", "Café?", "q")).encode("cp1252"))
    merged = tmp_path / "merged.jsonl"
    code, _, err = run_cli(capsys, "labels", "merge", records, path, "-o", merged)
    assert code == 2
    assert (
        f'error: {path}:3: byte 0xe9 is not UTF-8 (a Latin-1 or cp1252 file?): save it as "CSV UTF-8"'
        in err.splitlines()
    )
    assert not merged.exists()


# ---------------------------------------------------------------- files without rows


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.csv", b""),
        ("bom.csv", b"\xef\xbb\xbf"),
        ("header.csv", f"{HEADER},helpful\r\n".encode()),
        ("header-and-blank-lines.csv", f"{HEADER},helpful\r\n\r\n\r\n".encode()),
        ("header.tsv", f"{HEADER},helpful\n".replace(",", "\t").encode()),
        ("empty.jsonl", b""),
        ("blank.jsonl", b"\n  \n"),
    ],
)
def test_a_file_without_rows_is_an_error(tmp_path: Path, records: list[Record], name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    read = read_annotations([path], records)
    assert problems(read) == [(str(path), None, None, NO_ROWS)]
    assert read.votes == {} and read.annotators == {}


def test_cli_merge_refuses_a_header_only_file_beside_a_filled_one(capsys: Capsys, tmp_path: Path) -> None:
    records = write_jsonl(tmp_path / "records.jsonl", RECORDS)
    filled = tmp_path / "ann.csv"
    filled.write_text(helpful_csv(("1", "0", "1")), encoding="utf-8")
    empty = tmp_path / "ben.csv"
    empty.write_text(f"{HEADER},helpful\n", encoding="utf-8")
    merged = tmp_path / "merged.jsonl"
    code, _, err = run_cli(capsys, "labels", "merge", records, filled, empty, "-o", merged)
    assert code == 2
    assert f"error: {empty}: {NO_ROWS}" in err.splitlines()
    assert not merged.exists()


# ---------------------------------------------------------------- broken CSV


def test_an_unclosed_quote_is_named(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "ann.csv"
    # line 3 opens a quote that never closes: r2's and r3's rows are lost in it
    path.write_text(
        f'{HEADER},helpful\nann,r1,,answer,,,q,a,1\nann,r2,,answer,,,"q,a,0\nann,r3,,answer,,,q,a,1\n', encoding="utf-8"
    )
    read = read_annotations([path], records)
    assert problems(read) == [
        (str(path), 3, None, UNCLOSED),
        (str(path), None, None, missing_row("r2")),
        (str(path), None, None, missing_row("r3")),
    ]
    assert read.votes == {("r1", "", 0): {"helpful": {"ann": 1}}}


def test_an_unclosed_quote_in_the_header_is_named(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "ann.csv"
    path.write_text(f'"{HEADER},helpful\nann,r1,,answer,,,q,a,1\n', encoding="utf-8")
    read = read_annotations([path], records)
    assert problems(read) == [(str(path), 1, None, UNCLOSED)]


def test_a_row_that_breaks_csv_quoting_is_one_problem(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "ann.csv"
    # line 3: text after a closing quote; the rows before and after are read
    path.write_text(
        f'{HEADER},helpful\nann,r1,,answer,,,q,a,1\nann,r2,,answer,,,"q"x,a,0\nann,r3,,answer,,,q,a,1\n',
        encoding="utf-8",
    )
    read = read_annotations([path], records)
    assert problems(read) == [
        (str(path), 3, None, "the row cannot be read as CSV: ',' expected after '\"'"),
        (str(path), None, None, missing_row("r2")),
    ]
    assert read.votes == {("r1", "", 0): {"helpful": {"ann": 1}}, ("r3", "", 0): {"helpful": {"ann": 1}}}


# ---------------------------------------------------------------- template paths


@pytest.mark.parametrize("name", ["t.xlsx", "t.txt", "t"])
def test_a_suffix_the_template_cannot_be_written_as_is_refused(
    tmp_path: Path, records: list[Record], name: str
) -> None:
    with pytest.raises(ConfigError, match=r"written as CSV \(\.csv\), TSV \(\.tsv\) or JSONL \(\.jsonl\)"):
        write_template(records, tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_created(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "new" / "folder" / "t.csv"
    assert write_template(records, path, ("helpful",)) == 3
    assert path.read_text(encoding="utf-8").splitlines()[0] == f"{HEADER},helpful"


def test_a_folder_or_a_file_in_the_way_is_a_config_error(tmp_path: Path, records: list[Record]) -> None:
    folder = tmp_path / "t.csv"
    folder.mkdir()
    with pytest.raises(ConfigError, match=re.escape("is a folder: give a file name ending .csv, .tsv or .jsonl")):
        write_template(records, folder)
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"t.csv cannot be written: {blocker} is a file"):
        write_template(records, blocker / "t.csv")


def interrupted(records: list[Record]) -> Iterator[Record]:
    """The first record, then an interrupt (Ctrl-C) while the template is being written."""
    yield records[0]
    raise KeyboardInterrupt


def test_an_interrupted_write_leaves_no_file(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "t.csv"
    with pytest.raises(KeyboardInterrupt):
        write_template(interrupted(records), path)
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_rewrite_keeps_the_older_template(tmp_path: Path, records: list[Record]) -> None:
    path = tmp_path / "t.jsonl"
    write_template(records, path, ("helpful",))
    before = path.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        write_template(interrupted(records), path)
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]


def test_cli_template_paths(capsys: Capsys, tmp_path: Path) -> None:
    records = write_jsonl(tmp_path / "records.jsonl", RECORDS)
    nested = tmp_path / "labels" / "round-1" / "t.csv"
    code, out, err = run_cli(capsys, "labels", "template", records, "-o", nested, "--labels", "helpful")
    assert code == 0, err
    assert out.startswith(f"{nested}: 3 rows to label")
    code, _, err = run_cli(capsys, "labels", "template", records, "-o", tmp_path / "t.xlsx")
    assert code == 2
    assert err.startswith(f"error: {tmp_path / 't.xlsx'}: a template is written as CSV (.csv)")
    assert not (tmp_path / "t.xlsx").exists()
