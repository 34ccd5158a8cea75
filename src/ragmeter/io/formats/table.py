"""Tables: CSV, TSV and Parquet files of records, one row each, columns named as ragmeter's fields (or mapped to them
with ``--map FIELD=COLUMN``). A table with RAGAS's column names is read as RAGAS.

Cells of the structured fields (``contexts``, ``references``, ``usage``, …) that hold JSON text are decoded; a lone
text in ``references`` is one reference; ``prompt_tokens`` and ``completion_tokens`` columns become one usage entry.
An empty cell is a missing field, except an empty answer, which is an empty answer.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import Record
from ragmeter.io.fields import MAX_TOKENS_PER_CALL, exact_number
from ragmeter.io.formats.base import InputFormat, parsed
from ragmeter.io.formats.native import KNOWN_FIELDS, record_from_dict
from ragmeter.io.formats.ragas import RAGAS_FIELDS, looks_like_ragas, record_from_ragas
from ragmeter.io.rows import Span, csv_dicts, csv_rows, header_problem, parquet_rows

__all__ = [
    "CSV",
    "MAP_FIELDS",
    "PARQUET",
    "missing_columns",
    "parse_column_map",
    "read_csv",
    "read_parquet",
    "table_records",
]

_STRUCTURED = (
    "contexts",
    "references",
    "history",
    "usage",
    "labels",
    "qrels",
    "nuggets",
    "metadata",
    "retrieved_contexts",
    "retrieved_context_ids",
)
_NUMERIC = ("latency_ms",)
_TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens")
_KEEP_EMPTY = ("answer", "response")  # an empty answer cell is an empty answer, not a missing one
#: The fields ``--map`` may fill: the native record's, the token columns a table splits usage into, the metadata
#: fields ragmeter reads, and RAGAS's (a table with them is read as RAGAS).
MAP_FIELDS = (*KNOWN_FIELDS, *_TOKEN_COLUMNS, "model_id", "conversation_id", "run_id", *RAGAS_FIELDS)


def read_csv(
    path: Path, column_map: Mapping[str, str], span: Span | None = None
) -> Iterator[tuple[int, Record | InputError]]:
    """(line, record or its error) of a CSV/TSV file, numbered by the line each row starts on, except that a row
    right after blank lines has the number of the first of them, as it always had (its default id is that number).
    """
    rows = csv_rows(path)
    header = next(rows, None)
    if header is None:  # an empty file, which iter_records reports
        return
    problem = header_problem(path, header) or missing_columns(path, header.cells, column_map)
    if problem is not None:
        yield 0, problem
        return
    yield from table_records(path, csv_dicts(path, header, rows), column_map)


def read_parquet(
    path: Path, column_map: Mapping[str, str], span: Span | None = None
) -> Iterator[tuple[int, Record | InputError]]:
    """(row number from 1, record or its error) of a Parquet file."""
    names, rows = parquet_rows(path)
    problem = missing_columns(path, names, column_map)
    if problem is not None:
        yield 0, problem
        return
    yield from table_records(path, rows, column_map)


def table_records(
    path: Path, rows: Iterator[tuple[int, dict[str, Any] | InputError]], column_map: Mapping[str, str]
) -> Iterator[tuple[int, Record | InputError]]:
    """(line, record or the error that rejects it) of numbered table rows (a CSV's, a Parquet file's, a
    DataFrame's), their columns renamed by ``column_map``; a row with RAGAS's column names is read as RAGAS."""
    columns = {column: field for field, column in column_map.items()}
    for number, row in rows:
        if isinstance(row, InputError):
            yield number, row
            continue
        try:
            obj = _table_row(row, columns, {"path": str(path), "line": number})
        except InputError as exc:
            yield number, exc
            continue
        if looks_like_ragas(obj):
            yield number, parsed(record_from_ragas, obj, path=str(path), line=number)
        else:
            yield number, parsed(record_from_dict, obj, path=str(path), line=number, names=column_map)


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
                raise InputError(
                    f"broken JSON in this cell at column {exc.colno}: {exc.msg}", field=name, **where
                ) from exc
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
    if (
        isinstance(number, bool)
        or not isinstance(number, (int, float))
        or not math.isfinite(number)
        or number != int(number)
        or number < 0
    ):
        raise InputError(f"expected a whole number of tokens ≥ 0, found {value!r}", field=column, **where)
    if number > MAX_TOKENS_PER_CALL:
        raise InputError(
            f"expected a whole number ≤ {MAX_TOKENS_PER_CALL:,} (tokens per call), found "
            f"{exact_number(number)}: a value this large is a logging error; check how this column "
            "was recorded",
            field=column,
            **where,
        )
    return int(number)


def missing_columns(path: Path, header: list[str], column_map: Mapping[str, str]) -> InputError | None:
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
            raise ConfigError(
                f"--map {field_name}={column}: {field_name!r} is not a record field{hint}. FIELD is one "
                f"of {', '.join(MAP_FIELDS[: -len(RAGAS_FIELDS)])}; in RAGAS-style tables also "
                f"{', '.join(RAGAS_FIELDS)} (unmapped columns keep their names; unknown ones go to "
                "metadata)"
            )
        if field_name in mapping:
            raise ConfigError(
                f"--map names {field_name!r} twice (columns {mapping[field_name]!r} and {column!r}): keep one"
            )
        other = next((name for name, taken in mapping.items() if taken == column), None)
        if other is not None:
            raise ConfigError(
                f"--map maps both {other!r} and {field_name!r} to column {column!r}: a column fills one field"
            )
        mapping[field_name] = column
    return mapping


CSV = InputFormat(
    "csv",
    "CSV",
    "a CSV (.csv) or TSV (.tsv) table with a header row, one record per row",
    read_csv,
    family="csv",
    suffixes=(".csv", ".tsv"),
    spans=False,
    columns=True,
)
PARQUET = InputFormat(
    "parquet",
    "Parquet",
    "a Parquet (.parquet, .pq) table, one record per row",
    read_parquet,
    family="parquet",
    suffixes=(".parquet", ".pq"),
    magic=b"PAR1",
    spans=False,
    columns=True,
)
