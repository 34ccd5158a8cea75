"""The one row source of ragmeter's files: lines, JSONL objects and CSV/TSV/Parquet rows, each numbered by the
line it starts on, with the fault that spoils a row as an :class:`InputError` carrying path and line.

Record files (:mod:`ragmeter.io.readers`), annotation files (:mod:`ragmeter.human.annotation_files`), item rows and
calibration tables all read through it, so a fault has one wording wherever it is met. Text is read as UTF-8; a
byte-order mark at the start (Excel's "CSV UTF-8", Notepad) is dropped, and a line that is not UTF-8 is an error of
that line only, naming the byte.

Three faults keep a second wording, :data:`ANNOTATION_WORDS`, for annotation files, whose tests pin it (issue 28
changed no message a test asserts); :data:`WORDS` is the wording every other reader uses.
"""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ragmeter.core.errors import ConfigError, InputError, MissingDependencyError
from ragmeter.io.fields import allow_long_csv_cells

__all__ = [
    "ANNOTATION_WORDS",
    "NOT_AN_OBJECT",
    "TABLE_SUFFIXES",
    "WORDS",
    "CsvRow",
    "Span",
    "Words",
    "broken_quoting",
    "csv_dicts",
    "csv_rows",
    "header_problem",
    "jsonl_objects",
    "line_spans",
    "object_rows",
    "parquet_rows",
    "stops_file",
    "text_lines",
]

NOT_AN_OBJECT = "expected one JSON object per line"
TABLE_SUFFIXES = (".csv", ".tsv")


@dataclass(frozen=True)
class Words:
    """The words of the faults that two readers' tests pin differently (see the module docstring)."""

    broken_json: Callable[[json.JSONDecodeError], str]
    #: (the csv error, the row's line, the last line read): a quote never closed, a cell over csv's size limit
    #: or any other broken quoting.
    broken_csv: Callable[[csv.Error, int, int], str]


def _broken_csv(exc: csv.Error, start: int, ended: int) -> str:
    if _runs_on(exc) == "unclosed":
        return (
            f"a quoted cell in the row at line {start} is never closed, so lines {start} to {ended} (the end of "
            "the file) were read as one cell: add the closing quote, and write each quote inside a quoted cell "
            'twice ("")'
        )
    if _runs_on(exc) == "too long":
        return (
            f"a cell in the row at line {start} runs past {csv.field_size_limit():,} characters, the most a CSV "
            "cell may hold: if a quote opens a cell there and is never closed, close it; for texts this long, "
            "use JSONL"
        )
    return broken_quoting(exc)


def broken_quoting(exc: csv.Error) -> str:
    """The words of a quote that closes before its cell ends (``"ab"c``), in a row or in the header."""
    return (
        f"broken quoting ({exc}): a quoted cell must end at its closing quote; write each quote inside a "
        'quoted cell twice ("")'
    )


def _annotation_csv(exc: csv.Error, start: int, ended: int) -> str:
    if "unexpected end of data" in str(exc):
        return 'a quoted cell in the row that starts on this line is never closed: add its closing quote (")'
    return f"the row cannot be read as CSV: {exc}"


WORDS = Words(
    broken_json=lambda exc: f"broken JSON at column {exc.colno}: {exc.msg.removesuffix(' at')}", broken_csv=_broken_csv
)
ANNOTATION_WORDS = Words(broken_json=lambda exc: f"not valid JSON: {exc.msg}", broken_csv=_annotation_csv)


def _runs_on(exc: csv.Error) -> str | None:
    """``"unclosed"`` or ``"too long"`` for a cell that runs on past what the reader can follow, so the rest of
    the file is lost in it; ``None`` for an error that spoils its row only."""
    if str(exc) == "unexpected end of data":
        return "unclosed"
    if str(exc).startswith("field larger than field limit"):
        return "too long"
    return None


def stops_file(exc: csv.Error) -> bool:
    """Whether the csv error ``exc`` swallowed the rest of the file (so no later row can be trusted)."""
    return _runs_on(exc) is not None


# ---------------------------------------------------------------- lines


@dataclass(frozen=True)
class Span:
    """Part of a JSONL file: the bytes ``[start, end)``, which begin at the start of line ``first_line``. Its
    ends lie at the end of a ``\n``-terminated line (:func:`line_spans`), so its lines are numbered as in the
    whole file."""

    start: int
    end: int
    first_line: int


def line_spans(path: Path, lines: int) -> Iterator[Span]:
    """The file cut into spans of about ``lines`` lines each (counted as :func:`text_lines` counts them), read
    once without keeping more than one line in memory."""
    start = offset = 0
    first = number = 1
    with path.open("rb") as handle:
        for chunk in handle:  # one b"\n"-terminated piece: a span may end after it
            offset += len(chunk)
            number += len(chunk.splitlines())
            if number - first >= lines:
                yield Span(start, offset, first)
                start, first = offset, number
    if offset > start:
        yield Span(start, offset, first)


def text_lines(path: Path, span: Span | None = None) -> Iterator[tuple[int, str | InputError]]:
    """(line number, text or the :class:`InputError` of a line that is not UTF-8) for every line of the file,
    or of its ``span``.

    Lines end at ``\n``, ``\r\n`` or a lone ``\r`` (as in text mode) and keep their ending; a byte-order mark
    at the start of the file is dropped. Decoding line by line lets a bad byte spoil only its own line; the
    error names the byte's position in its line (from 1, after any byte-order mark) and its value.
    """
    for number, _, text in _file_lines(path, span):
        yield number, text


def _file_lines(path: Path, span: Span | None = None) -> Iterator[tuple[int, bytes, str | InputError]]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot open the file: {exc.strerror}", path=str(path)) from exc
    with handle:
        if span is not None:
            handle.seek(span.start)
        lines = _raw_lines(handle, None if span is None else span.end - span.start)
        for number, raw in enumerate(lines, start=1 if span is None else span.first_line):
            yield number, raw, _decoded(raw, number, path)


def _raw_lines(handle: BinaryIO, limit: int | None = None) -> Iterator[bytes]:
    """The lines of ``handle`` from where it stands, up to ``limit`` bytes (a whole number of lines)."""
    for chunk in handle:  # binary iteration splits at b"\n" only
        yield from chunk.splitlines(keepends=True)
        if limit is not None:
            limit -= len(chunk)
            if limit <= 0:
                return


def _decoded(raw: bytes, number: int, path: Path) -> str | InputError:
    if number == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(
            f"not UTF-8 text at line {number}, byte {exc.start + 1} of the line "
            f"(0x{raw[exc.start]:02x}): save the file as UTF-8",
            path=str(path),
            line=number,
        )


# ---------------------------------------------------------------- JSONL


def jsonl_objects(path: Path, span: Span | None = None, *, words: Words = WORDS) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object or InputError) for every non-blank line (of ``span``, when given). A file whose
    first line opens a JSON array is one error, saying how to convert it."""
    for number, line in text_lines(path, span):
        if isinstance(line, InputError):
            yield number, line
            continue
        if not line.strip():
            continue
        if number == 1 and line.lstrip().startswith("["):
            yield (
                number,
                InputError(
                    "this looks like a JSON array; ragmeter reads JSONL (one object "
                    "per line): convert it with  jq -c '.[]' FILE > FILE.jsonl",
                    path=str(path),
                    line=number,
                ),
            )
            return
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, InputError(words.broken_json(exc), path=str(path), line=number)
        except ValueError as exc:  # an integer of more than 4,300 digits
            yield number, InputError(f"unreadable JSON: {exc}", path=str(path), line=number)


# ---------------------------------------------------------------- CSV, TSV and Parquet


@dataclass(frozen=True)
class CsvRow:
    """One row of a CSV/TSV file (the header is the first): its ``cells``, or the ``fault`` that spoils it (the
    csv module's error, or the error of a line in it that is not UTF-8; ``cells`` is then empty).

    ``line`` is the line the row starts on and ``last`` the line it ends on (a quoted cell may span lines);
    ``after`` is the line after the previous row, which is ``line`` unless blank lines come between them.
    """

    line: int
    last: int
    after: int
    cells: list[str]
    fault: csv.Error | InputError | None = None


def csv_rows(path: Path) -> Iterator[CsvRow]:
    """The rows of a CSV file, or of a TSV file (by its suffix ``.tsv``), header first, blank lines after it skipped. A
    cell may hold up to :data:`~ragmeter.io.fields.CSV_CELL_LIMIT` characters, not Python's default 131,072.

    A quote that closes before its cell ends (``"ab"c``) is a fault of its row only; a quote that opens a cell and
    never closes takes in the rest of the file (:func:`stops_file`). A row holding a line that is not UTF-8 is a
    fault of that row: its quotes still tell where the row ends.
    """
    undecodable: dict[int, InputError] = {}

    def lines() -> Iterator[str]:
        for number, raw, line in _file_lines(path):
            if isinstance(line, InputError):
                undecodable[number] = line
                yield raw.decode("utf-8", errors="replace")
            elif line:  # empty only when a byte-order mark is all the file holds
                yield line

    dialect = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
    allow_long_csv_cells()
    reader = csv.reader(lines(), dialect=dialect, strict=True)  # strict: a stray quote is an error
    after = 1
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield CsvRow(start, reader.line_num, after, [], exc)
            after = reader.line_num + 1
            continue
        if not cells and start > 1:  # a blank line; a blank first line is an empty header
            continue
        bad = [undecodable.pop(n) for n in range(start, reader.line_num + 1) if n in undecodable]
        yield CsvRow(start, reader.line_num, after, [] if bad else cells, bad[0] if bad else None)
        after = reader.line_num + 1


def parquet_rows(path: Path) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    """The column names of a Parquet file and its rows, numbered from 1."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("pyarrow", "parquet", "reading Parquet files") from exc
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=str(path)) from exc

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        number = 0
        for batch in table.iter_batches(batch_size=1024):
            for row in batch.to_pylist():
                number += 1
                yield number, row

    return list(table.schema_arrow.names), rows()


def csv_dicts(path: Path, header: CsvRow, rows: Iterable[CsvRow]) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """``rows`` as ``{column of header: cell}`` (as :class:`csv.DictReader` makes them: missing cells ``None``,
    extra cells a list under ``None``), numbered by :attr:`CsvRow.after` as the records' CSV always was, or the
    error that spoils each; a cell that runs on to the end of the file ends them with an error of the whole file."""
    for row in rows:
        if isinstance(row.fault, csv.Error):
            message = WORDS.broken_csv(row.fault, row.after, row.last)
            if stops_file(row.fault):
                yield row.after, InputError(message, path=str(path))
                return
            yield row.after, InputError(message, path=str(path), line=row.after)
        elif row.fault is not None:
            yield row.fault.line or row.after, row.fault
        else:
            yield row.after, _as_dict(header.cells, row.cells)


def _as_dict(header: list[str], cells: list[str]) -> dict[Any, Any]:
    row: dict[Any, Any] = dict(zip(header, cells, strict=False))  # a short or long row is completed below
    if len(cells) > len(header):
        row[None] = cells[len(header) :]
    for name in header[len(cells) :]:
        row[name] = None
    return row


def object_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) of a JSONL file of objects, or of a CSV/TSV file with a header (its values as text, read as
    the records' CSV is: a byte-order mark skipped, a line that is not UTF-8 or broken quoting an error of its
    row); the first bad row raises its :class:`InputError`."""
    if not path.is_file():
        what = (
            "no such file: check the path"
            if not path.exists()
            else "is a folder: give the file in it"
            if path.is_dir()
            else "is not a regular file but a pipe, a device or a socket: save it to a file first"
        )
        raise ConfigError(f"{path}: {what}")
    rows = _table_dicts(path) if path.suffix.lower() in TABLE_SUFFIXES else jsonl_objects(path)
    for line, row in rows:
        if isinstance(row, InputError):
            raise row
        if not isinstance(row, dict):
            raise InputError(NOT_AN_OBJECT, path=str(path), line=line)
        yield line, row


def _table_dicts(path: Path) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    rows = csv_rows(path)
    header = next(rows, None)
    if header is None:
        return
    problem = header_problem(path, header)
    if problem is not None:
        yield 0, problem
        return
    yield from csv_dicts(path, header, rows)


def header_problem(path: Path, header: CsvRow) -> InputError | None:
    """The error of the whole file when its header row cannot be read, else ``None``."""
    if isinstance(header.fault, csv.Error):
        return InputError(f"cannot read the header row (line 1): {broken_quoting(header.fault)}", path=str(path))
    if header.fault is not None:
        return InputError(header.fault.reason, path=str(path))
    return None
