"""What an input format is: how to recognise a file of it and how to read the file's rows into records."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.core.errors import InputError
from ragmeter.core.records import Record
from ragmeter.io.rows import Span, jsonl_objects

__all__ = ["FormatOption", "InputFormat", "Parser", "Reader", "file_head", "jsonl_reader", "parsed"]

#: One raw object (a JSONL line, a table row) to a :class:`Record`, raising :class:`InputError` (``path``, ``line``).
Parser = Callable[..., Record]
#: (path, column mapping, span or ``None``) → (line, record or the error that rejects it) for every row of the file;
#: the reader of a format that declares ``options`` takes their values (defaults filled in) as a fourth argument.
Reader = Callable[..., Iterator[tuple[int, "Record | InputError"]]]


@dataclass(frozen=True)
class FormatOption:
    """A choice that a format's reader takes, given on the command line as ``--<format>-<name>``: its ``choices``
    (the first is the default) and one line of help."""

    name: str
    choices: tuple[str, ...]
    help: str

    @property
    def default(self) -> str:
        return self.choices[0]


@dataclass(frozen=True)
class InputFormat:
    """One input format of ``--input-format``, registered in :data:`ragmeter.io.formats.REGISTRY`.

    A file is detected as the first registered format whose ``claims`` returns why the file is of it (for a format
    told by what the file holds whatever its suffix: OTLP JSON's first bytes, the columns of a Phoenix export's
    Parquet schema or first JSON object; it returns ``None`` for a file not of it, and is asked before ``suffixes``
    and ``magic``); failing that, whose ``suffixes`` hold the file's suffix; failing that, as JSONL:
    the first format whose ``matches`` accepts the first JSON object of the file, else ``native``. ``family``
    groups the formats one container holds (the JSONL flavours): a file of one family read as another is one error
    of the whole file. ``magic`` is how a file of the format begins, when it always begins so (Parquet's ``PAR1``).
    ``spans``: the file may be cut at line ends into parts read apart (the Ray engine does). ``columns``: rows are
    named by columns, so a ``--map FIELD=COLUMN`` mapping applies.
    """

    name: str
    title: str  # in messages: "--input-format csv reads this file as CSV"
    description: str  # one line for --help
    read: Reader
    family: str = "jsonl"
    suffixes: tuple[str, ...] = ()
    matches: Callable[[Mapping[str, Any]], bool] | None = None
    magic: bytes | None = None
    claims: Callable[[Path], str | None] | None = None
    spans: bool = True
    columns: bool = False
    options: tuple[FormatOption, ...] = ()


def file_head(path: Path) -> bytes | None:
    """The file's first 4 KiB, what detection looks at; ``None`` when it cannot be read (its reader says why)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4096)
    except OSError:
        return None


def parsed(parser: Parser, obj: Any, **where: Any) -> Record | InputError:
    """``parser(obj, **where)``, or the :class:`InputError` it raises."""
    try:
        return parser(obj, **where)
    except InputError as exc:
        return exc


def jsonl_reader(parser: Parser) -> Reader:
    """The reader of a JSONL format whose lines ``parser`` turns into records."""

    def read(
        path: Path,
        column_map: Mapping[str, str],
        span: Span | None = None,
    ) -> Iterator[tuple[int, Record | InputError]]:
        for number, obj in jsonl_objects(path, span):
            yield number, obj if isinstance(obj, InputError) else parsed(parser, obj, path=str(path), line=number)

    return read
