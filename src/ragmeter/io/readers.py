"""Reading evaluation files: JSONL (native, MT-RAG, RAGAS), CSV and Parquet with a column mapping.

Every reader streams: records are parsed one at a time. :func:`iter_records` yields each record or the
:class:`InputError` that stops it, so callers can report all bad records of a file before scoring.

Text files are read as UTF-8; a byte-order mark at the start (Excel's "CSV UTF-8", Notepad) is dropped.
A line that is not UTF-8 is an error of that line only, naming the byte, so it can be skipped.

A format given explicitly (not ``auto``) that the file contradicts is one error of the whole file, naming
``--input-format``, instead of an error per record: when its first bytes say otherwise (Parquet's ``PAR1``, a JSON
object read as CSV or Parquet, a ``.csv`` file read as JSONL), or when its first ``FORMAT_PROBE`` records all fail
and its first JSON object has the fields of another JSONL flavour.
"""

from __future__ import annotations

import codecs
import csv
import difflib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ragmeter.core.errors import ConfigError, InputError, MissingDependencyError
from ragmeter.core.records import Record
from ragmeter.io.fields import MAX_TOKENS_PER_CALL, allow_long_csv_cells, exact_number
from ragmeter.io.mtrag import record_from_mtrag
from ragmeter.io.native import KNOWN_FIELDS, record_from_dict
from ragmeter.io.ragas import record_from_ragas

__all__ = ["FORMATS", "FORMAT_PROBE", "MAP_FIELDS", "FileCheck", "Span", "check_file", "detect_format",
           "iter_records", "jsonl_objects", "line_spans", "object_rows", "parse_column_map", "raw_records",
           "read_records", "repeated_id", "text_lines"]

FORMATS = ("auto", "native", "mtrag", "ragas", "csv", "parquet")
_FORMAT_NAMES = {"native": "ragmeter's JSONL", "mtrag": "MT-RAG JSONL", "ragas": "RAGAS JSONL", "csv": "CSV",
                 "parquet": "Parquet"}
#: Records read, all failing, before an explicit format that auto-detection disagrees with is called wrong.
FORMAT_PROBE = 5
_STRUCTURED = ("contexts", "references", "history", "usage", "labels", "metadata", "retrieved_contexts",
               "retrieved_context_ids")
_NUMERIC = ("latency_ms",)
_TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens")
_RAGAS_FIELDS = ("user_input", "response", "retrieved_contexts", "retrieved_context_ids")
#: The fields ``--map`` may fill: the native record's, the token columns a table splits usage into, the metadata
#: fields ragmeter reads, and RAGAS's (a table with them is read as RAGAS).
MAP_FIELDS = (*KNOWN_FIELDS, *_TOKEN_COLUMNS, "model_id", "conversation_id", "run_id", *_RAGAS_FIELDS)
Parser = Callable[..., Record]
_PARSERS: dict[str, Parser] = {"native": record_from_dict, "mtrag": record_from_mtrag, "ragas": record_from_ragas}


def _row_flavour(obj: Mapping[str, Any]) -> str:
    if "predictions" in obj or ("task_id" in obj and "input" in obj):
        return "mtrag"
    if "user_input" in obj or "retrieved_contexts" in obj:
        return "ragas"
    return "native"


def detect_format(path: str | Path) -> str:
    """``csv`` or ``parquet`` by extension; for JSONL, the flavour of the first parseable line."""
    suffix = Path(path).suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    return _jsonl_flavour(Path(path))


def _jsonl_flavour(path: Path) -> str:
    for _, obj in jsonl_objects(path):
        if isinstance(obj, dict):
            return _row_flavour(obj)
    return "native"


def _family(kind: str) -> str:
    return "jsonl" if kind in _PARSERS else kind


def _looks_like(path: Path) -> tuple[str, str] | None:
    """(format, evidence) when the file's first bytes plainly tell its format, else ``None``."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None  # iter_records reports the file itself
    if head.startswith(b"PAR1"):
        return "parquet", "it begins with PAR1, as Parquet files do"
    text = head.removeprefix(codecs.BOM_UTF8).lstrip()
    if text.startswith(b"{"):
        return _jsonl_flavour(path), "its first non-blank character is '{', as in JSONL"
    if text and path.suffix.lower() in (".csv", ".tsv"):
        return "csv", f"it is a {path.suffix.lower()} file whose first line is not a JSON object"
    return None


def _wrong_format(path: Path, kind: str) -> InputError | None:
    """The error of an explicit format that the file's first bytes contradict."""
    seen = _looks_like(path)
    if seen is None or _family(seen[0]) == _family(kind):
        return None
    return InputError(f"--input-format {kind} reads this file as {_FORMAT_NAMES[kind]}, but {seen[1]}: pass "
                      f"--input-format {seen[0]}, or leave the option out to detect the format", path=str(path))


def _failing_format(path: Path, kind: str, failed: list[InputError], ended: bool) -> InputError | None:
    """The error of an explicit format whose first records (``failed``, all of them when ``ended``) all fail
    while the file's first bytes look like another format."""
    seen = _looks_like(path)
    if seen is None or seen[0] == kind:
        return None
    detected = seen[0]
    first = failed[0]
    where = ", ".join(part for part in (f"line {first.line}" if first.line is not None else None,
                                        f"field '{first.field}'" if first.field else None) if part)
    records = f"the {len(failed)} records" if ended else f"the first {len(failed)} records"
    return InputError(f"--input-format {kind}: {records} all fail as {_FORMAT_NAMES[kind]} ({where}: "
                      f"{first.reason}), and the file looks like {_FORMAT_NAMES[detected]}: pass "
                      f"--input-format {detected}, or leave the option out to detect the format", path=str(path))


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
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not UTF-8 text at line {number}, byte {exc.start + 1} of the line "
                          f"(0x{raw[exc.start]:02x}): save the file as UTF-8", path=str(path), line=number)


def jsonl_objects(path: Path, span: Span | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object or InputError) for every non-blank line (of ``span``, when given)."""
    for number, line in text_lines(path, span):
        if isinstance(line, InputError):
            yield number, line
            continue
        if not line.strip():
            continue
        if number == 1 and line.lstrip().startswith("["):
            yield number, InputError("this looks like a JSON array; ragmeter reads JSONL (one object "
                                     "per line): convert it with  jq -c '.[]' FILE > FILE.jsonl",
                                     path=str(path), line=number)
            return
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, InputError(f"broken JSON at column {exc.colno}: {exc.msg}", path=str(path), line=number)
        except ValueError as exc:  # an integer of more than 4,300 digits
            yield number, InputError(f"unreadable JSON: {exc}", path=str(path), line=number)


def object_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) of a JSONL file of objects, or of a CSV/TSV file with a header (its values as text, read as
    the records' CSV is: a byte-order mark skipped, a line that is not UTF-8 or broken quoting an error of its
    row); the first bad row raises its :class:`InputError`."""
    if not path.is_file():
        raise ConfigError(f"{path} is not a file")
    rows = _csv_rows(path, {}) if path.suffix.lower() in (".csv", ".tsv") else jsonl_objects(path)
    for line, row in rows:
        if isinstance(row, InputError):
            raise row
        if not isinstance(row, dict):
            raise InputError("each line must be a JSON object", path=str(path), line=line)
        yield line, row


_KEEP_EMPTY = ("answer", "response")  # an empty answer cell is an empty answer, not a missing one


def _table_row(row: Mapping[str, Any], columns: Mapping[str, str], where: dict[str, Any]) -> dict[str, Any]:
    """A CSV/Parquet row renamed to ragmeter's fields; JSON text in structured columns is decoded, and
    ``prompt_tokens``/``completion_tokens`` columns become one usage entry."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        target = columns.get(name, name)
        if value is None or (isinstance(value, str) and value == "" and target not in _KEEP_EMPTY):
            continue
        if isinstance(value, str) and target in _STRUCTURED and value.lstrip()[:1] in ("[", "{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise InputError(f"broken JSON in this cell at column {exc.colno}: {exc.msg}",
                                 field=name, **where) from exc
        elif isinstance(value, str) and target == "references":
            value = [value]
        elif isinstance(value, str) and target in _NUMERIC:
            value = _number_or_keep(value)
        elif target in _TOKEN_COLUMNS:
            value = _token_count(value, name, where)
        out[target] = value
    if "usage" not in out and any(k in out for k in _TOKEN_COLUMNS):
        out["usage"] = {k: out.pop(k) for k in _TOKEN_COLUMNS if k in out}
    return out


def _number_or_keep(value: str) -> Any:
    try:
        return float(value)
    except ValueError:
        return value  # the record parser names the column and the expected type


def _token_count(value: Any, column: str, where: dict[str, Any]) -> int:
    number = _number_or_keep(value) if isinstance(value, str) else value
    if (isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number)
            or number != int(number) or number < 0):
        raise InputError(f"expected a whole number of tokens ≥ 0, found {value!r}", field=column, **where)
    if number > MAX_TOKENS_PER_CALL:
        raise InputError(f"expected a whole number ≤ {MAX_TOKENS_PER_CALL:,} (tokens per call), found "
                         f"{exact_number(number)}: a value this large is a logging error; check how this column "
                         "was recorded", field=column, **where)
    return int(number)


def _table_rows(path: Path, kind: str,
                column_map: Mapping[str, str]) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """(line or row number, row as {column: cell}, or the error of that row). A problem with the file as a
    whole, such as a mapped column the header lacks, is one error without a line, and ends the rows."""
    if kind == "csv":
        yield from _csv_rows(path, column_map)
        return
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("pyarrow", "parquet", "reading Parquet files") from exc
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=str(path)) from exc
    missing = _missing_columns(path, table.schema_arrow.names, column_map)
    if missing is not None:
        yield 0, missing
        return
    number = 0
    for batch in table.iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            number += 1
            yield number, row


def _missing_columns(path: Path, header: list[str], column_map: Mapping[str, str]) -> InputError | None:
    """The file-level error for mapped columns the header lacks, naming the columns it has."""
    wrong = [(name, column) for name, column in column_map.items() if column not in header]
    if not wrong:
        return None
    problems = []
    for name, column in wrong:
        close = difflib.get_close_matches(column, header, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(f"field {name!r} is mapped to column {column!r}, which the file lacks{hint}")
    has = ", ".join(repr(column) for column in header) or "none"
    return InputError(f"{'; '.join(problems)}. The file's columns are: {has}", path=str(path))


def _csv_rows(path: Path, column_map: Mapping[str, str]) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """CSV/TSV rows, numbered by the file line each starts on (a quoted cell may span lines). A cell may hold up to
    :data:`~ragmeter.io.fields.CSV_CELL_LIMIT` characters, not Python's default 131,072.

    A row holding a line that is not UTF-8, or a quote that closes before the cell ends (``"ab"c``), is an
    error of that row. A quote that opens a cell and never closes takes in the rest of the file, so it
    stops the file with an error naming the line of that row.
    """
    undecodable: dict[int, InputError] = {}

    def lines() -> Iterator[str]:
        for number, raw, line in _file_lines(path):
            if isinstance(line, InputError):
                undecodable[number] = line
                # the row is reported, not read; its quotes still tell the reader where the row ends
                yield raw.decode("utf-8", errors="replace")
            else:
                yield line

    dialect = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
    allow_long_csv_cells()
    reader = csv.DictReader(lines(), dialect=dialect, strict=True)  # strict: a stray quote is an error
    problem = _header_problem(reader, path, undecodable, column_map)
    if problem is not None:
        yield 0, problem
        return
    ended = reader.line_num  # the header's last line
    while True:
        start = ended + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            ended = reader.reader.line_num
            unclosed = _unclosed(exc, path, start, ended)
            yield start, unclosed or InputError(_quoting(exc), path=str(path), line=start)
            if unclosed is not None:
                return
            continue
        ended = reader.line_num
        bad = [undecodable.pop(n) for n in range(start, ended + 1) if n in undecodable]
        yield (bad[0].line or start, bad[0]) if bad else (start, dict(row))


def _header_problem(reader: csv.DictReader[str], path: Path, undecodable: Mapping[int, InputError],
                    column_map: Mapping[str, str]) -> InputError | None:
    """The file-level error of a header that cannot be read or lacks a mapped column, else ``None``."""
    try:
        header = reader.fieldnames
    except csv.Error as exc:
        return InputError(f"cannot read the header row (line 1): {_quoting(exc)}", path=str(path))
    if undecodable:
        return InputError(next(iter(undecodable.values())).reason, path=str(path))
    if header is None:  # an empty file, which iter_records reports
        return None
    return _missing_columns(path, list(header), column_map)


def _unclosed(exc: csv.Error, path: Path, start: int, ended: int) -> InputError | None:
    """The file-level error of a cell that runs on past what the reader can follow (a quote never closed, or
    a cell over csv's size limit), or ``None`` for an error that spoils its row only."""
    if str(exc) == "unexpected end of data":
        return InputError(f"a quoted cell in the row at line {start} is never closed, so lines {start} to {ended} "
                          "(the end of the file) were read as one cell: add the closing quote, and write each "
                          'quote inside a quoted cell twice ("")', path=str(path))
    if str(exc).startswith("field larger than field limit"):
        return InputError(f"a cell in the row at line {start} runs past {csv.field_size_limit():,} characters, "
                          "the most a CSV cell may hold: if a quote opens a cell there and is never closed, close "
                          "it; for texts this long, use JSONL", path=str(path))
    return None


def _quoting(exc: csv.Error) -> str:
    return (f"broken quoting ({exc}): a quoted cell must end at its closing quote; write each quote inside a "
            'quoted cell twice ("")')


def iter_records(path: str | Path, *, format: str = "auto",
                 column_map: Mapping[str, str] | None = None) -> Iterator[Record | InputError]:
    """Each record of the file, or the :class:`InputError` that rejects it, in file order.

    ``format`` is one of ``auto``, ``native``, ``mtrag``, ``ragas`` (JSONL), ``csv``, ``parquet``.
    ``column_map`` maps ragmeter field names to table columns (``{"question": "query"}``); unmapped
    columns are read under their own names, and a table with RAGAS column names is read as RAGAS.
    An empty file yields one error without a line, as does a file that cannot be read past some point (a
    mapped column the header lacks, a CSV quote never closed: the rows read before it come first), and a file that
    an explicit ``format`` contradicts (see the module docstring). An ``id`` repeated for the same ``model_id`` is
    an error on the later record (MT-RAG files hold each task once per responding model).
    """
    if format not in FORMATS:
        raise ConfigError(f"unknown input format {format!r}: choose one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=str(path))
    kind = detect_format(path) if format == "auto" else format
    if column_map and kind not in ("csv", "parquet"):
        raise ConfigError("a column mapping applies to CSV and Parquet files only")
    wrong = None if format == "auto" else _wrong_format(path, kind)
    if wrong is not None:
        yield wrong
        return
    items = _unique_ids(path, raw_records(path, kind, column_map or {}))
    count = 0
    for item in items if format == "auto" else _probed(path, kind, items):
        count += 1
        yield item
    if count == 0:
        yield InputError("the file holds no records", path=str(path))


def _unique_ids(path: Path, items: Iterator[tuple[int, Record | InputError]]) -> Iterator[Record | InputError]:
    seen: dict[tuple[str, str | None], int] = {}
    for number, item in items:
        if isinstance(item, Record):
            first = seen.setdefault((item.id, item.model_id), number)
            if first != number:
                item = repeated_id(item.id, item.model_id, f"line {first}", path=str(path), line=number)
        yield item


def _probed(path: Path, kind: str, items: Iterator[Record | InputError]) -> Iterator[Record | InputError]:
    """``items`` of a file read in an explicit format; only the error of that format instead when its first
    ``FORMAT_PROBE`` records (all, if fewer) fail and auto-detection reads the file as another format."""
    failed: list[InputError] = []
    for item in items:
        if not isinstance(item, InputError) or item.line is None:
            yield from failed
            yield item
            yield from items
            return
        failed.append(item)
        if len(failed) == FORMAT_PROBE:
            break
    wrong = _failing_format(path, kind, failed, ended=len(failed) < FORMAT_PROBE) if failed else None
    if wrong is not None:
        yield wrong
        return
    yield from failed
    yield from items


def repeated_id(item_id: str, model_id: str | None, first: str, *, path: str, line: int) -> InputError:
    """The error of a record whose id (for its model) an earlier record, at ``first``, already has."""
    of_model = f" for model_id {model_id!r}" if model_id is not None else ""
    return InputError(f"repeats the id {item_id!r}{of_model} of {first}: ids must be unique per model", path=path,
                      line=line, field="id")


def raw_records(path: Path, kind: str, column_map: Mapping[str, str],
                span: Span | None = None) -> Iterator[tuple[int, Record | InputError]]:
    """(line, record or the error that rejects it) of a file of a known ``kind`` (``span``: of those lines of a
    JSONL file only), without the checks across records (:func:`iter_records` adds them)."""
    where = {"path": str(path)}
    if kind in _PARSERS:
        for number, obj in jsonl_objects(path, span):
            if isinstance(obj, InputError):
                yield number, obj
                continue
            yield number, _parse(_PARSERS[kind], obj, path=str(path), line=number)
        return
    columns = {column: field for field, column in column_map.items()}
    for number, row in _table_rows(path, kind, column_map):
        if isinstance(row, InputError):
            yield number, row
            continue
        try:
            obj = _table_row(row, columns, {**where, "line": number})
        except InputError as exc:
            yield number, exc
            continue
        if _row_flavour(obj) == "ragas":
            yield number, _parse(record_from_ragas, obj, path=str(path), line=number)
        else:
            yield number, _parse(record_from_dict, obj, path=str(path), line=number, names=column_map)


def _parse(parser: Parser, obj: Any, **where: Any) -> Record | InputError:
    try:
        return parser(obj, **where)
    except InputError as exc:
        return exc


def parse_column_map(pairs: Sequence[str]) -> dict[str, str]:
    """``--map FIELD=COLUMN`` options as a mapping of record field to column name. FIELD is one of
    :data:`MAP_FIELDS`; a field named twice, or a column given to two fields, is an error too, since one of the
    options would do nothing."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        field_name, sep, column = (part.strip() for part in pair.partition("="))
        if not sep or not field_name or not column:
            raise ConfigError(f"--map takes FIELD=COLUMN, got {pair!r}")
        if field_name not in MAP_FIELDS:
            close = difflib.get_close_matches(field_name, MAP_FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"--map {field_name}={column}: {field_name!r} is not a record field{hint}. FIELD is one "
                              f"of {', '.join(MAP_FIELDS[:-len(_RAGAS_FIELDS)])}; in RAGAS-style tables also "
                              f"{', '.join(_RAGAS_FIELDS)} (unmapped columns keep their names; unknown ones go to "
                              "metadata)")
        if field_name in mapping:
            raise ConfigError(f"--map names {field_name!r} twice (columns {mapping[field_name]!r} and {column!r}): "
                              "keep one")
        other = next((name for name, taken in mapping.items() if taken == column), None)
        if other is not None:
            raise ConfigError(f"--map maps both {other!r} and {field_name!r} to column {column!r}: a column fills "
                              "one field")
        mapping[field_name] = column
    return mapping


def read_records(path: str | Path, *, format: str = "auto", column_map: Mapping[str, str] | None = None,
                 skip_invalid: bool = False) -> Iterator[Record]:
    """The file's records; the first bad one raises its :class:`InputError` unless ``skip_invalid``. An error
    of the file as a whole (no line: no record at all, a mapped column the header lacks, a quote never closed)
    raises even with ``skip_invalid``, since skipping it would leave records out unseen."""
    for item in iter_records(path, format=format, column_map=column_map):
        if isinstance(item, InputError):
            if not skip_invalid or item.line is None:
                raise item
            continue
        yield item


@dataclass
class FileCheck:
    """The outcome of reading a whole file once: valid record count and the errors (up to a limit)."""

    n_valid: int = 0
    n_invalid: int = 0
    errors: list[InputError] = field(default_factory=list)
    file_error: InputError | None = None  # a problem with the file as a whole, such as no record at all

    @property
    def ok(self) -> bool:
        return self.n_invalid == 0 and self.file_error is None


def check_file(path: str | Path, *, format: str = "auto", column_map: Mapping[str, str] | None = None,
               max_errors: int = 50) -> FileCheck:
    """Read the whole file, count valid records, and keep the first ``max_errors`` errors."""
    check = FileCheck()
    for item in iter_records(path, format=format, column_map=column_map):
        if isinstance(item, InputError) and item.line is None:
            check.file_error = item
        elif isinstance(item, InputError):
            check.n_invalid += 1
            if len(check.errors) < max_errors:
                check.errors.append(item)
        else:
            check.n_valid += 1
    return check
