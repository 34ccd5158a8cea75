"""Annotation files for seed 003's labels: a template to fill in, and filled files read back as votes.

A template has one row per answer and one per retrieved chunk, with the text to judge beside the label
columns (CSV for spreadsheets, or JSONL)::

    annotator, record_id, model_id, unit, rank, doc_id, question, text, <label columns…>

``unit`` is ``answer`` or ``chunk`` (``rank`` 1, 2, … and ``doc_id`` identify the chunk). A label that
does not apply to the row's unit holds ``n/a``; the annotator writes 0 or 1 in the others. When the
``annotator`` cell is empty the file's name (without suffix) names the annotator.

Reading a filled file checks every row and collects every problem (:class:`AnnotationRead.errors`): an
unknown record id or chunk rank, a doc_id that does not match the chunk at that rank, a value other
than 0 or 1, an empty cell, a duplicate row, and, per annotator, every template row left out. A row
with a problem gives no vote. A file is read as UTF-8 with or without a byte-order mark (Excel's "CSV
UTF-8"); a file in another encoding, a binary file or one without rows is one problem of its own.

In CSV and TSV templates a cell that a spreadsheet would run as a formula (it starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) is written with a ``'`` in front, as OWASP advises against
formula injection; reading takes that quote off again, so ids such as ``-1`` come back unchanged.
"""

from __future__ import annotations

import codecs
import csv
import difflib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.files import Target, writing
from ragmeter.core.records import ALL_LABELS, ANSWER_LABELS, CHUNK_LABELS, Record
from ragmeter.io.rows import ANNOTATION_WORDS, NOT_AN_OBJECT, CsvRow, csv_rows, jsonl_objects

__all__ = [
    "AnnotationRead",
    "Votes",
    "check_template_path",
    "not_a_vote",
    "read_annotations",
    "template_rows",
    "unit_key",
    "write_rows",
    "write_template",
]

TEXT_COLUMNS = ("annotator", "record_id", "model_id", "unit", "rank", "doc_id", "question", "text")
NOT_APPLICABLE = "n/a"
TEMPLATE_SUFFIXES = (".csv", ".tsv", ".jsonl")
#: What makes a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NO_ROWS = "the file holds no rows: fill in the template and save it"

#: (record id, model id or "", rank): rank 0 is the answer, 1… the chunks.
UnitKey = tuple[str, str, int]
#: unit → label → annotator → 0/1
Votes = dict[UnitKey, dict[str, dict[str, int]]]


def unit_key(record: Record, rank: int = 0) -> UnitKey:
    return (record.id, record.model_id or "", rank)


def _describe(key: UnitKey) -> str:
    record_id, model_id, rank = key
    where = f"record {record_id!r}" + (f" (model {model_id!r})" if model_id else "")
    return f"{where} {'answer' if rank == 0 else f'chunk at rank {rank}'}"


def template_rows(
    records: Iterable[Record], labels: Sequence[str] = ALL_LABELS, *, annotator: str = ""
) -> Iterator[dict[str, Any]]:
    """One row per answer, then one per chunk of it, with empty cells for the applicable ``labels``;
    answer rows only when an answer label is asked for, chunk rows only for a chunk label."""
    want_answers = any(name in ANSWER_LABELS for name in labels)
    want_chunks = any(name in CHUNK_LABELS for name in labels)
    for record in records:
        if want_answers:
            yield _template_row(record, annotator, "answer", "", "", record.answer, labels, ANSWER_LABELS)
        if want_chunks:
            for rank, chunk in enumerate(record.contexts, start=1):
                text = f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text
                yield _template_row(record, annotator, "chunk", rank, chunk.doc_id, text, labels, CHUNK_LABELS)


def _template_row(
    record: Record,
    annotator: str,
    unit: str,
    rank: Any,
    doc_id: str,
    text: str,
    labels: Sequence[str],
    applicable: tuple[str, ...],
) -> dict[str, Any]:
    return {
        "annotator": annotator,
        "record_id": record.id,
        "model_id": record.model_id or "",
        "unit": unit,
        "rank": rank,
        "doc_id": doc_id,
        "question": record.question,
        "text": text,
        **{name: "" if name in applicable else NOT_APPLICABLE for name in labels},
    }


def write_template(
    records: Iterable[Record], path: str | Path | Target, labels: Sequence[str] = ALL_LABELS, *, annotator: str = ""
) -> int:
    """Write the template as CSV (``.csv``, ``.tsv``) or JSONL (``.jsonl``); returns the rows written.

    In JSONL a label to fill is ``null`` and labels that do not apply are left out. In CSV and TSV a cell
    that starts like a formula gets a ``'`` in front (see the module's docstring). A missing parent folder
    is created; the file is written beside its place and renamed at the end, so an interrupted write
    leaves no half template (and an older file at ``path`` as it was).

    Raises :class:`InputError` for an unknown label and :class:`ConfigError` for a suffix other than
    ``.csv``, ``.tsv`` or ``.jsonl``, a folder at ``path``, or a place that cannot be written.
    """
    unknown = [name for name in labels if name not in ALL_LABELS]
    if unknown:
        raise InputError(f"unknown labels {unknown}; seed 003's labels are {', '.join(ALL_LABELS)}")
    check_template_path(path.path if isinstance(path, Target) else path)
    return write_rows(template_rows(records, labels, annotator=annotator), path, labels)


def write_rows(rows: Iterable[dict[str, Any]], path: str | Path | Target, labels: Sequence[str]) -> int:
    """Write template rows (empty label cells, or filled with 0/1 by an annotator) as :func:`write_template`
    does; returns the rows written."""
    path = Target.of(path)
    suffix = path.path.suffix.lower()
    if suffix == ".jsonl":
        return _write_atomically(path, lambda handle: _write_jsonl(rows, handle))
    dialect = "excel-tab" if suffix == ".tsv" else "excel"
    return _write_atomically(path, lambda handle: _write_csv(rows, [*TEXT_COLUMNS, *labels], dialect, handle))


def check_template_path(path: str | Path) -> None:
    """Raise :class:`ConfigError` when a template cannot be written at ``path`` (a suffix other than
    ``.csv``, ``.tsv`` or ``.jsonl``, or a folder there), before any record is read."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TEMPLATE_SUFFIXES:
        raise ConfigError(
            f"{path}: a template is written as CSV (.csv), TSV (.tsv) or JSONL (.jsonl), not "
            f"{suffix or 'a name without suffix'}: give one of these suffixes (a spreadsheet "
            "opens .csv)"
        )
    if path.is_dir():
        raise ConfigError(f"{path} is a folder: give a file name ending .csv, .tsv or .jsonl")


def _write_jsonl(rows: Iterable[dict[str, Any]], handle: TextIO) -> int:
    count = 0
    for row in rows:
        row = {k: None if v == "" and k in ALL_LABELS else v for k, v in row.items() if v != NOT_APPLICABLE}
        handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        count += 1
    return count


def _write_csv(rows: Iterable[dict[str, Any]], columns: list[str], dialect: str, handle: TextIO) -> int:
    writer = csv.DictWriter(handle, fieldnames=columns, dialect=dialect)
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow({name: _neutralise(value) for name, value in row.items()})
        count += 1
    return count


def _write_atomically(target: Target, write: Callable[[TextIO], int]) -> int:
    """``write`` into a temporary file beside ``target`` that becomes it only when it succeeded (see
    :func:`ragmeter.core.files.writing`); a missing parent folder is created first."""
    with writing(target) as temporary, open(temporary, "w", encoding="utf-8", newline="") as handle:
        return write(handle)


def _neutralise(value: Any) -> Any:
    """``value`` with a ``'`` in front when it is text that starts like a formula. Text that starts with
    quotes and then a formula character gets one more quote too, so that :func:`_restore` gives every
    text back as it was."""
    if isinstance(value, str) and value.lstrip("'").startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _restore(cell: str) -> str:
    """Undo :func:`_neutralise`: one leading ``'`` off a cell whose quotes are followed by a formula
    character; any other cell as it is (a quote the annotator typed before a word stays)."""
    return cell[1:] if cell.startswith("'") and cell.lstrip("'").startswith(FORMULA_STARTS) else cell


@dataclass
class AnnotationRead:
    """Votes from filled files and every problem found (each an :class:`InputError` with path, line
    and field; a row left out has no line)."""

    votes: Votes = field(default_factory=dict)
    errors: list[InputError] = field(default_factory=list)
    annotators: dict[str, str] = field(default_factory=dict)  # annotator → the file that named them first


def read_annotations(paths: Sequence[str | Path], records: Sequence[Record]) -> AnnotationRead:
    """Read filled annotation files against the ``records`` they were made from. A row with a known
    unit but a problem counts as present (no "missing row" error on top of its own) and gives no vote."""
    index = {unit_key(r): r for r in records}
    by_id: dict[str, list[Record]] = {}
    for record in records:
        by_id.setdefault(record.id, []).append(record)
    read = AnnotationRead()
    expected: dict[str, set[str]] = {}  # annotator → label columns they were asked to fill
    seen: dict[str, set[UnitKey]] = {}
    for path in map(Path, paths):
        jsonl = path.suffix.lower() == ".jsonl"
        for line, row in _rows(path, read.errors):
            problems = len(read.errors)
            if jsonl:  # each JSON row names its own columns
                _known_columns(row, path, line, read.errors)
            columns = [name for name in row if name in ALL_LABELS]
            annotator = str(row.get("annotator") or "").strip() or path.stem
            read.annotators.setdefault(annotator, str(path))
            expected.setdefault(annotator, set()).update(columns)
            key = _row_unit(row, path, line, index, by_id, read.errors)
            if key is None:
                continue
            if key in seen.setdefault(annotator, set()):
                read.errors.append(
                    InputError(
                        f"a second row for {_describe(key)} by annotator {annotator!r}",
                        path=str(path),
                        line=line,
                        field="record_id",
                    )
                )
                continue
            seen[annotator].add(key)
            values = _row_values(row, key, path, line, read.errors)
            if values is not None and len(read.errors) == problems:
                for name, value in values.items():
                    read.votes.setdefault(key, {}).setdefault(name, {})[annotator] = value
    for annotator, labels in expected.items():
        units = [
            unit_key(r, rank)
            for r in records
            for rank in range(len(r.contexts) + 1)
            if (rank == 0 and labels & set(ANSWER_LABELS)) or (rank > 0 and labels & set(CHUNK_LABELS))
        ]
        for key in units:
            if key not in seen.get(annotator, set()):
                read.errors.append(
                    InputError(
                        f"no row for {_describe(key)} by annotator {annotator!r}: every template row needs a row",
                        path=read.annotators[annotator],
                    )
                )
    return read


def _rows(path: Path, errors: list[InputError]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(first line, row) of each row, read by the row source (:mod:`ragmeter.io.rows`); a file that is not UTF-8
    text or holds no rows is one error, and a CSV header with unknown or missing columns stops the file."""
    if not _is_utf8_text(path, errors):
        return
    if path.suffix.lower() == ".jsonl":
        yield from _jsonl_rows(path, errors)
    else:
        yield from _csv_rows(path, errors)


def _is_utf8_text(path: Path, errors: list[InputError]) -> bool:
    """Whether the file is UTF-8 text, with or without a byte-order mark; if not (and an error that says how to
    save the file) when it cannot be read, is UTF-16, is binary (NUL bytes: a workbook renamed ``.csv``, say) or
    is in another encoding (the line of its first bad byte, counted in ``\\n``). An annotation file is read whole
    or not at all: a spreadsheet saved in the wrong encoding spoils every row."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        errors.append(InputError(f"cannot open the file: {exc.strerror}", path=str(path)))
        return False
    save_as = 'save it as "CSV UTF-8"' if path.suffix.lower() == ".csv" else "save it as UTF-8 text"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # Excel's "Unicode Text"
        errors.append(InputError(f"the file is UTF-16 text: {save_as}", path=str(path)))
        return False
    if b"\0" in data:
        errors.append(
            InputError(f"not a text file (it holds NUL bytes; a spreadsheet workbook?): {save_as}", path=str(path))
        )
        return False
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        errors.append(
            InputError(
                f"byte 0x{data[exc.start]:02x} is not UTF-8 (a Latin-1 or cp1252 file?): {save_as}",
                path=str(path),
                line=line,
            )
        )
        return False
    return True


def _jsonl_rows(path: Path, errors: list[InputError]) -> Iterator[tuple[int, dict[str, Any]]]:
    found = False
    for line, row in jsonl_objects(path, words=ANNOTATION_WORDS):
        found = True
        if isinstance(row, InputError):
            errors.append(row)
        elif not isinstance(row, dict):
            errors.append(InputError(NOT_AN_OBJECT, path=str(path), line=line))
        else:
            yield line, row
    if not found:
        errors.append(InputError(NO_ROWS, path=str(path)))


def _csv_rows(path: Path, errors: list[InputError]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a CSV or TSV file, each cell with :func:`_restore` applied, numbered by the line each starts on."""
    rows = csv_rows(path)
    header = next(rows, None)
    if header is None:
        errors.append(InputError(NO_ROWS, path=str(path)))
        return
    if header.fault is not None:
        errors.append(_fault(path, header, header.fault))
        return
    if not _known_columns(dict.fromkeys(header.cells), path, 1, errors):
        return
    width = len(header.cells)
    found = False
    for row in rows:
        found = True
        if row.fault is not None:
            errors.append(_fault(path, row, row.fault))
        elif len(row.cells) > width:
            errors.append(
                InputError(
                    f"the row has {len(row.cells)} cells but the header {width}: quote cells that hold commas",
                    path=str(path),
                    line=row.line,
                )
            )
        else:
            cells = [_restore(cell) for cell in row.cells]
            yield row.line, dict(zip(header.cells, cells + [""] * (width - len(cells)), strict=True))
    if not found:
        errors.append(InputError(NO_ROWS, path=str(path)))


def _fault(path: Path, row: CsvRow, fault: csv.Error | InputError) -> InputError:
    if isinstance(fault, InputError):  # a line that is not UTF-8, which _is_utf8_text has ruled out
        return fault
    return InputError(ANNOTATION_WORDS.broken_csv(fault, row.line, row.last), path=str(path), line=row.line)


def _known_columns(row: Mapping[str, Any], path: Path, line: int, errors: list[InputError]) -> bool:
    unknown = [name for name in row if name not in TEXT_COLUMNS and name not in ALL_LABELS]
    for name in unknown:
        close = difflib.get_close_matches(str(name), ALL_LABELS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; labels are {', '.join(ALL_LABELS)}"
        errors.append(InputError(f"unknown column {name!r}{hint}", path=str(path), line=line, field=str(name)))
    missing = [name for name in ("record_id", "unit") if name not in row]
    for name in missing:
        errors.append(
            InputError(f"missing column {name!r}: keep the template's columns", path=str(path), line=line, field=name)
        )
    return not unknown and not missing


def _row_unit(
    row: Mapping[str, Any],
    path: Path,
    line: int,
    index: Mapping[UnitKey, Record],
    by_id: Mapping[str, list[Record]],
    errors: list[InputError],
) -> UnitKey | None:
    def error(field_name: str, message: str) -> None:
        errors.append(InputError(message, path=str(path), line=line, field=field_name))

    record_id = str(row.get("record_id") or "").strip()
    model_id = str(row.get("model_id") or "").strip()
    unit = str(row.get("unit") or "").strip()
    if unit not in ("answer", "chunk"):
        error("unit", f"expected 'answer' or 'chunk', found {unit!r}")
        return None
    record = index.get((record_id, model_id, 0))
    if record is None:
        candidates = by_id.get(record_id, [])
        if len(candidates) == 1 and not model_id:
            record = candidates[0]
        elif len(candidates) > 1 and not model_id:
            models = ", ".join(repr(r.model_id) for r in candidates)
            error("model_id", f"record id {record_id!r} has one record per model ({models}): fill model_id")
            return None
        elif candidates:
            models = ", ".join(repr(r.model_id or "") for r in candidates)
            error(
                "model_id", f"record id {record_id!r} has no record with model_id {model_id!r} (its model_id: {models})"
            )
            return None
        else:
            close = difflib.get_close_matches(record_id, by_id, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            error("record_id", f"unknown record id {record_id!r}: no such record in the records file{hint}")
            return None
    if unit == "answer":
        return unit_key(record)
    rank_text = str(row.get("rank") or "").strip()
    if not rank_text.isdigit() or not 1 <= int(rank_text) <= len(record.contexts):
        error(
            "rank",
            f"expected a chunk rank from 1 to {len(record.contexts)} for record {record.id!r}, found {rank_text!r}",
        )
        return None
    rank = int(rank_text)
    doc_id = str(row.get("doc_id") or "").strip()
    actual = record.contexts[rank - 1].doc_id
    if doc_id and doc_id != actual:  # the row is there, but gives no vote
        error(
            "doc_id",
            f"chunk id {doc_id!r} does not match the chunk at rank {rank} of record {record.id!r} ({actual!r})",
        )
    return unit_key(record, rank)


def _row_values(
    row: Mapping[str, Any], key: UnitKey, path: Path, line: int, errors: list[InputError]
) -> dict[str, int] | None:
    applicable = ANSWER_LABELS if key[2] == 0 else CHUNK_LABELS
    values: dict[str, int] = {}
    ok = True
    for name in ALL_LABELS:
        if name not in row:
            continue
        raw = row[name]
        text = "" if raw is None else str(raw).strip()
        if name not in applicable:
            if text not in ("", NOT_APPLICABLE):
                errors.append(
                    InputError(
                        f"{name} does not apply to {'a chunk' if key[2] else 'an answer'} row; "
                        f"leave it {NOT_APPLICABLE!r}",
                        path=str(path),
                        line=line,
                        field=name,
                    )
                )
                ok = False
            continue
        if raw is True or raw is False:
            text = str(int(raw))
        if text in ("0", "1"):
            values[name] = int(text)
        else:
            errors.append(InputError(not_a_vote(raw), path=str(path), line=line, field=name))
            ok = False
    return values if ok else None


def not_a_vote(raw: Any) -> str:
    """What is wrong with ``raw`` as the value of one of seed 003's labels (:data:`ALL_LABELS`), each 0 or 1: the
    one rule ``labels merge`` applies to a filled template, and ``agree`` and ``estimate`` to any human file."""
    text = "" if raw is None else str(raw).strip()
    return f"expected 0 or 1, found {'an empty cell' if text == '' else repr(raw)}"
