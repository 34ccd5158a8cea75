"""Reading evaluation files: JSONL (native, MT-RAG, RAGAS), CSV and Parquet with a column mapping.

Every reader streams: records are parsed one at a time. :func:`iter_records` yields each record or the
:class:`InputError` that stops it, so callers can report all bad records of a file before scoring.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ragmeter.errors import ConfigError, InputError, MissingDependencyError
from ragmeter.io.mtrag import record_from_mtrag
from ragmeter.io.native import record_from_dict
from ragmeter.io.ragas import record_from_ragas
from ragmeter.records import Record

__all__ = ["FORMATS", "FileCheck", "check_file", "detect_format", "iter_records", "jsonl_objects", "read_records"]

FORMATS = ("auto", "native", "mtrag", "ragas", "csv", "parquet")
_STRUCTURED = ("contexts", "references", "history", "usage", "labels", "metadata", "retrieved_contexts",
               "retrieved_context_ids")
_NUMERIC = ("latency_ms",)
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
    for _, obj in jsonl_objects(Path(path)):
        if isinstance(obj, dict):
            return _row_flavour(obj)
    return "native"


def jsonl_objects(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object or InputError) for every non-blank line."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot open the file: {exc.strerror}", path=str(path)) from exc
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
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
                    yield number, InputError(f"broken JSON at column {exc.colno}: {exc.msg}",
                                             path=str(path), line=number)
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start}): save the file as UTF-8",
                             path=str(path)) from exc


_KEEP_EMPTY = ("answer", "response")  # an empty answer cell is an empty answer, not a missing one
_TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens")


def _table_row(row: Mapping[str, Any], columns: Mapping[str, str], where: dict[str, Any]) -> dict[str, Any]:
    """A CSV/Parquet row renamed to ragmeter's fields; JSON text in structured columns is decoded, and
    ``prompt_tokens``/``completion_tokens`` columns become one usage entry."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        target = columns.get(name, name)
        if value is None or (isinstance(value, str) and value == "" and target not in _KEEP_EMPTY):
            continue
        if isinstance(value, str) and target in _STRUCTURED and value.lstrip()[:1] in "[{":
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
    if isinstance(number, bool) or not isinstance(number, (int, float)) or number != int(number) or number < 0:
        raise InputError(f"expected a whole number of tokens ≥ 0, found {value!r}", field=column, **where)
    return int(number)


def _table_rows(path: Path, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if kind == "csv":
        try:
            handle = path.open(encoding="utf-8", newline="")
        except OSError as exc:
            raise InputError(f"cannot open the file: {exc.strerror}", path=str(path)) from exc
        with handle:
            reader = csv.DictReader(handle, dialect="excel-tab" if path.suffix.lower() == ".tsv" else "excel")
            ended = 1  # the header's line; a quoted cell may make a row span several lines
            for row in reader:
                yield ended + 1, dict(row)
                ended = reader.line_num
        return
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("pyarrow", "parquet", "reading Parquet files") from exc
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=str(path)) from exc
    number = 0
    for batch in table.iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            number += 1
            yield number, row


def iter_records(path: str | Path, *, format: str = "auto",
                 column_map: Mapping[str, str] | None = None) -> Iterator[Record | InputError]:
    """Each record of the file, or the :class:`InputError` that rejects it, in file order.

    ``format`` is one of ``auto``, ``native``, ``mtrag``, ``ragas`` (JSONL), ``csv``, ``parquet``.
    ``column_map`` maps ragmeter field names to table columns (``{"question": "query"}``); unmapped
    columns are read under their own names, and a table with RAGAS column names is read as RAGAS.
    An empty file yields one error without a line; an ``id`` repeated for the same ``model_id`` is an
    error on the later record (MT-RAG files hold each task once per responding model).
    """
    if format not in FORMATS:
        raise ConfigError(f"unknown input format {format!r}: choose one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=str(path))
    kind = detect_format(path) if format == "auto" else format
    if column_map and kind not in ("csv", "parquet"):
        raise ConfigError("a column mapping applies to CSV and Parquet files only")
    seen: dict[tuple[str, str | None], int] = {}
    count = 0
    for number, item in _raw_records(path, kind, column_map or {}):
        count += 1
        if isinstance(item, Record):
            first = seen.setdefault((item.id, item.model_id), number)
            if first != number:
                of_model = f" for model_id {item.model_id!r}" if item.model_id is not None else ""
                item = InputError(f"repeats the id {item.id!r}{of_model} of line {first}: ids must be unique "
                                  "per model", path=str(path), line=number, field="id")
        yield item
    if count == 0:
        yield InputError("the file holds no records", path=str(path))


def _raw_records(path: Path, kind: str, column_map: Mapping[str, str]) -> Iterator[tuple[int, Record | InputError]]:
    where = {"path": str(path)}
    if kind in _PARSERS:
        for number, obj in jsonl_objects(path):
            if isinstance(obj, InputError):
                yield number, obj
                continue
            yield number, _parse(_PARSERS[kind], obj, path=str(path), line=number)
        return
    columns = {column: field for field, column in column_map.items()}
    for number, row in _table_rows(path, kind):
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


def read_records(path: str | Path, *, format: str = "auto", column_map: Mapping[str, str] | None = None,
                 skip_invalid: bool = False) -> Iterator[Record]:
    """The file's records; the first bad one raises its :class:`InputError` unless ``skip_invalid``."""
    for item in iter_records(path, format=format, column_map=column_map):
        if isinstance(item, InputError):
            if not skip_invalid:
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
