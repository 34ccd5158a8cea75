"""Reading evaluation files in any input format of :mod:`ragmeter.io.formats` (JSONL: native, MT-RAG, RAGAS; CSV and
Parquet with a column mapping), through the row source :mod:`ragmeter.io.rows`.

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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from os import PathLike
from pathlib import Path
from typing import Any

from ragmeter.core.errors import ConfigError, InputError
from ragmeter.core.records import Record
from ragmeter.io.formats import FORMATS, REGISTRY, detect_format, looks_like, resolve_options
from ragmeter.io.formats.table import MAP_FIELDS, parse_column_map
from ragmeter.io.ids import unique_ids
from ragmeter.io.objects import object_records
from ragmeter.io.rows import Span, jsonl_objects, line_spans, object_rows, text_lines

__all__ = [
    "FORMATS",
    "FORMAT_PROBE",
    "MAP_FIELDS",
    "FileCheck",
    "InputFile",
    "Span",
    "check_file",
    "detect_format",
    "iter_records",
    "jsonl_objects",
    "line_spans",
    "object_rows",
    "parse_column_map",
    "raw_records",
    "read_records",
    "text_lines",
]

#: Records read, all failing, before an explicit format that auto-detection disagrees with is called wrong.
FORMAT_PROBE = 5


def _wrong_format(path: Path, kind: str) -> InputError | None:
    """The error of an explicit format that the file's first bytes contradict."""
    seen = looks_like(path)
    if seen is None or REGISTRY[seen[0]].family == REGISTRY[kind].family:
        return None
    return InputError(
        f"--input-format {kind} reads this file as {REGISTRY[kind].title}, but {seen[1]}: pass "
        f"--input-format {seen[0]}, or leave the option out to detect the format",
        path=str(path),
    )


def _failing_format(path: Path, kind: str, failed: list[InputError], ended: bool) -> InputError | None:
    """The error of an explicit format whose first records (``failed``, all of them when ``ended``) all fail
    while the file's first bytes look like another format."""
    seen = looks_like(path)
    if seen is None or seen[0] == kind:
        return None
    detected = seen[0]
    first = failed[0]
    where = ", ".join(
        part
        for part in (
            f"line {first.line}" if first.line is not None else None,
            f"field '{first.field}'" if first.field else None,
        )
        if part
    )
    records = f"the {len(failed)} records" if ended else f"the first {len(failed)} records"
    return InputError(
        f"--input-format {kind}: {records} all fail as {REGISTRY[kind].title} ({where}: "
        f"{first.reason}), and the file looks like {REGISTRY[detected].title}: pass "
        f"--input-format {detected}, or leave the option out to detect the format",
        path=str(path),
    )


def iter_records(
    path: str | Path | Any,
    *,
    format: str = "auto",
    column_map: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
) -> Iterator[Record | InputError]:
    """Each record of the file, or the :class:`InputError` that rejects it, in file order.

    ``format`` is ``auto`` or the name of a registered format (:data:`~ragmeter.io.formats.FORMATS`: ``native``,
    ``mtrag``, ``ragas`` (JSONL), ``csv``, ``parquet``).
    ``column_map`` maps ragmeter field names to table columns (``{"question": "query"}``); unmapped
    columns are read under their own names, and a table with RAGAS column names is read as RAGAS. ``options`` are
    the format's reader options, keyed as the command line names them (``{"otel-retrieval": "all"}``).
    ``path`` may also be a framework's object (:mod:`ragmeter.io.objects`: a DataFrame, a Hugging Face dataset,
    RAGAS samples, DeepEval test cases).
    An empty file yields one error without a line, as does a file that cannot be read past some point (a
    mapped column the header lacks, a CSV quote never closed: the rows read before it come first), and a file that
    an explicit ``format`` contradicts (see the module docstring). An ``id`` repeated for the same ``model_id`` is
    an error on the later record (MT-RAG files hold each task once per responding model).
    """
    if not isinstance(path, (str, PathLike)):
        yield from object_records(path, column_map=column_map)
        return
    yield from InputFile(Path(path), format, column_map or {}, options or {}).items()


@dataclass(frozen=True)
class InputFile:
    """A file of records as one command reads it: its path, its format as given (``auto``: detected), the column
    mapping of a table and the format's reader options (see :func:`iter_records`). The format is detected once,
    when first needed (:attr:`kind`), however often the file is then checked and read; a format given explicitly
    keeps its own checks (see the module). An unknown format is a :class:`ConfigError` at once."""

    path: Path
    format: str = "auto"
    column_map: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.format != "auto" and self.format not in REGISTRY:  # the registry: a format registered later counts
            raise ConfigError(f"unknown input format {self.format!r}: choose one of {', '.join(('auto', *REGISTRY))}")

    @cached_property
    def kind(self) -> str:
        """The file's format: as given, or detected from the file (once). A file that is missing, or a pipe or a
        device (read more than once, records would be lost), is an :class:`InputError`."""
        if not self.path.exists():
            raise InputError(
                "no such file: check the path (a relative one is read from the working directory)", path=str(self.path)
            )
        if not self.path.is_file() and not self.path.is_dir():
            raise InputError(
                "not a regular file but a pipe, a device or a socket (as /dev/stdin and a shell's <(…) "
                "give): records are read more than once, so save them to a file first",
                path=str(self.path),
            )
        return detect_format(self.path) if self.format == "auto" else self.format

    def items(self) -> Iterator[Record | InputError]:
        """Each record of the file, or the :class:`InputError` that rejects it (:func:`iter_records`)."""
        kind = self.kind
        if self.column_map and not REGISTRY[kind].columns:
            raise ConfigError("a column mapping applies to CSV and Parquet files only")
        reader_options = resolve_options(kind, self.options)
        wrong = None if self.format == "auto" else _wrong_format(self.path, kind)
        if wrong is not None:
            yield wrong
            return
        items = unique_ids(self.path, raw_records(self.path, kind, self.column_map, options=reader_options))
        count = 0
        for item in items if self.format == "auto" else _probed(self.path, kind, items):
            count += 1
            yield item
        if count == 0:
            yield InputError("the file holds no records", path=str(self.path))

    def records(self, *, skip_invalid: bool = False) -> Iterator[Record]:
        """The file's records (:func:`read_records`)."""
        return _valid(self.items(), skip_invalid)

    def check(self, max_errors: int = 50) -> FileCheck:
        """The file read once: its valid records counted, its first ``max_errors`` errors kept (:func:`check_file`)."""
        return _checked(self.items(), max_errors)


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


def raw_records(
    path: Path,
    kind: str,
    column_map: Mapping[str, str],
    span: Span | None = None,
    *,
    options: Mapping[str, str] | None = None,
) -> Iterator[tuple[int, Record | InputError]]:
    """(line, record or the error that rejects it) of a file of a known ``kind`` (``span``: of those lines of a
    JSONL file only; ``options``: the format's own, resolved), without the checks across records
    (:func:`iter_records` adds them)."""
    fmt = REGISTRY[kind]
    if fmt.options:
        return fmt.read(path, column_map, span, resolve_options(kind, {}) if options is None else options)
    return fmt.read(path, column_map, span)


def read_records(
    path: str | Path | Any,
    *,
    format: str = "auto",
    column_map: Mapping[str, str] | None = None,
    skip_invalid: bool = False,
    options: Mapping[str, str] | None = None,
) -> Iterator[Record]:
    """The file's records; the first bad one raises its :class:`InputError` unless ``skip_invalid``. An error
    of the file as a whole (no line: no record at all, a mapped column the header lacks, a quote never closed)
    raises even with ``skip_invalid``, since skipping it would leave records out unseen."""
    return _valid(iter_records(path, format=format, column_map=column_map, options=options), skip_invalid)


def _valid(items: Iterator[Record | InputError], skip_invalid: bool) -> Iterator[Record]:
    for item in items:
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


def check_file(
    path: str | Path,
    *,
    format: str = "auto",
    column_map: Mapping[str, str] | None = None,
    max_errors: int = 50,
    options: Mapping[str, str] | None = None,
) -> FileCheck:
    """Read the whole file, count valid records, and keep the first ``max_errors`` errors."""
    return _checked(iter_records(path, format=format, column_map=column_map, options=options), max_errors)


def _checked(items: Iterator[Record | InputError], max_errors: int) -> FileCheck:
    check = FileCheck()
    for item in items:
        if isinstance(item, InputError) and item.line is None:
            check.file_error = item
        elif isinstance(item, InputError):
            check.n_invalid += 1
            if len(check.errors) < max_errors:
                check.errors.append(item)
        else:
            check.n_valid += 1
    return check
