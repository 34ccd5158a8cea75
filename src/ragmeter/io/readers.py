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

__all__ = ["FORMATS", "FileCheck", "check_file", "detect_format", "iter_records", "read_records"]

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
    for _, obj in _jsonl_lines(Path(path)):
        if isinstance(obj, dict):
            return _row_flavour(obj)
    return "native"


def _jsonl_lines(path: Path) -> Iterator[tuple[int, Any]]:
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


def _table_row(row: Mapping[str, Any], columns: Mapping[str, str], where: dict[str, Any]) -> dict[str, Any]:
    """A CSV/Parquet row renamed to ragmeter's fields; JSON text in structured columns is decoded."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        target = columns.get(name, name)
        if value is None or (isinstance(value, str) and value == ""):
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
            try:
                value = float(value)
            except ValueError:
                pass  # the record parser names the column and the expected type
        out[target] = value
    if "usage" not in out and ("prompt_tokens" in out or "completion_tokens" in out):
        out["usage"] = {k: _int_or_keep(out.pop(k)) for k in ("prompt_tokens", "completion_tokens") if k in out}
    return out


def _int_or_keep(value: Any) -> Any:
    try:
        return int(value) if isinstance(value, str) else value
    except ValueError:
        return value


def _table_rows(path: Path, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if kind == "csv":
        try:
            handle = path.open(encoding="utf-8", newline="")
        except OSError as exc:
            raise InputError(f"cannot open the file: {exc.strerror}", path=str(path)) from exc
        with handle:
            reader = csv.DictReader(handle, dialect="excel-tab" if path.suffix.lower() == ".tsv" else "excel")
            for row in reader:
                yield reader.line_num, dict(row)
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
    An empty file yields one error; a repeated ``id`` is an error on the later record.
    """
    if format not in FORMATS:
        raise ConfigError(f"unknown input format {format!r}: choose one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=str(path))
    kind = detect_format(path) if format == "auto" else format
    if column_map and kind not in ("csv", "parquet"):
        raise ConfigError("a column mapping applies to CSV and Parquet files only")
    seen: dict[str, int] = {}
    count = 0
    for number, item in _raw_records(path, kind, column_map or {}):
        count += 1
        if isinstance(item, Record):
            first = seen.setdefault(item.id, number)
            if first != number:
                item = InputError(f"repeats the id {item.id!r} of line {first}: ids must be unique",
                                  path=str(path), line=number, field="id")
        yield item
    if count == 0:
        yield InputError("the file holds no records", path=str(path))


def _raw_records(path: Path, kind: str, column_map: Mapping[str, str]) -> Iterator[tuple[int, Record | InputError]]:
    where = {"path": str(path)}
    if kind in _PARSERS:
        for number, obj in _jsonl_lines(path):
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

    @property
    def ok(self) -> bool:
        return self.n_invalid == 0


def check_file(path: str | Path, *, format: str = "auto", column_map: Mapping[str, str] | None = None,
               max_errors: int = 50) -> FileCheck:
    """Read the whole file, count valid records, and keep the first ``max_errors`` errors."""
    check = FileCheck()
    for item in iter_records(path, format=format, column_map=column_map):
        if isinstance(item, InputError):
            check.n_invalid += 1
            if len(check.errors) < max_errors:
                check.errors.append(item)
        else:
            check.n_valid += 1
    return check
