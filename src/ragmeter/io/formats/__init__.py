"""The input formats of ``--input-format``, each a module of this package registered on one line below.

A format is an :class:`InputFormat`: its name, how a file of it is recognised (what it holds, suffix, first JSON
object, first bytes), the options its reader takes, and how its rows become records. :data:`FORMATS` (the CLI's
choices and the Ray engine's) and :func:`detect_format` come from :data:`REGISTRY`, so a new format joins here
and nowhere else.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Mapping
from pathlib import Path

from ragmeter.core.errors import ConfigError
from ragmeter.io.formats import mtrag, native, otel, phoenix, ragas, table
from ragmeter.io.formats.base import FormatOption, InputFormat, file_head
from ragmeter.io.rows import jsonl_objects

__all__ = [
    "FORMATS",
    "REGISTRY",
    "FormatOption",
    "InputFormat",
    "detect_format",
    "format_help",
    "looks_like",
    "register",
    "resolve_options",
]

#: name → format, in the order of ``--input-format``'s choices and of detection.
REGISTRY: dict[str, InputFormat] = {}


def register(fmt: InputFormat) -> InputFormat:
    """Add ``fmt`` to :data:`REGISTRY` (a name taken already is an error) and return it."""
    if fmt.name in REGISTRY or fmt.name == "auto":
        raise ValueError(f"an input format named {fmt.name!r} is registered already")
    REGISTRY[fmt.name] = fmt
    return fmt


register(native.FORMAT)
register(mtrag.FORMAT)
register(ragas.FORMAT)
register(table.CSV)
register(table.PARQUET)
register(otel.FORMAT)
register(phoenix.FORMAT)

#: ``auto`` and every registered format's name: the choices of ``--input-format``.
FORMATS = ("auto", *REGISTRY)
_FALLBACK = native.FORMAT.name
#: The keys of a JSON file's first object that a message about its format names.
_KEYS_SHOWN = 3


def format_help() -> str:
    """One line per choice of ``--input-format``, for ``--help``."""
    return "; ".join(
        [f"{fmt.name}: {fmt.description}" for fmt in REGISTRY.values()]
        + ["auto (the default): detected from the file's suffix and first record"]
    )


def detect_format(path: str | Path) -> str:
    """The format that claims the file (``claims``: OTLP JSON's first bytes, a Phoenix export's columns); else the
    one whose suffixes hold the file's (``csv``, ``parquet``); else, for JSONL, the flavour of the first parseable
    line."""
    claimed = _claimed(Path(path))
    if claimed is not None:
        return claimed[0]
    suffix = Path(path).suffix.lower()
    for fmt in REGISTRY.values():
        if suffix in fmt.suffixes:
            return fmt.name
    return _jsonl_flavour(Path(path))


def _claimed(path: Path) -> tuple[str, str] | None:
    """(format, why) of the first format that claims the file."""
    for fmt in REGISTRY.values():
        why = fmt.claims(path) if fmt.claims is not None else None
        if why is not None:
            return fmt.name, why
    return None


def resolve_options(kind: str, given: Mapping[str, str]) -> dict[str, str]:
    """The options of format ``kind``'s reader, with defaults, from ``given`` (``{"otel-retrieval": "all"}``: keys
    are ``<format>-<option>``, as the command line names them). An option of another format, or an unknown
    choice, is a :class:`ConfigError`."""
    fmt = REGISTRY[kind]
    for key, value in given.items():
        option = next((o for o in fmt.options if f"{fmt.name}-{o.name}" == key), None)
        if option is None:
            owner = key.partition("-")[0]
            owner = REGISTRY[owner].title if owner in REGISTRY else owner
            raise ConfigError(f"--{key} applies to {owner}, but this file is read as {fmt.title}")
        if value not in option.choices:
            raise ConfigError(f"--{key} takes {', '.join(option.choices)}; got {value!r}")
    return {o.name: given.get(f"{fmt.name}-{o.name}", o.default) for o in fmt.options}


def _jsonl_flavour(path: Path) -> str:
    for _, obj in jsonl_objects(path):
        if isinstance(obj, dict):
            return next(
                (fmt.name for fmt in REGISTRY.values() if fmt.matches is not None and fmt.matches(obj)), _FALLBACK
            )
    return _FALLBACK


def looks_like(path: Path) -> tuple[str, str] | None:
    """(format, evidence) when the file's first bytes plainly tell its format, else ``None``."""
    head = file_head(path)
    if head is None:
        return None
    claimed = _claimed(path)  # before magic: a Parquet file may be a format's own
    if claimed is not None:
        return claimed
    for fmt in REGISTRY.values():
        if fmt.magic is not None and head.startswith(fmt.magic):
            return fmt.name, f"it begins with {fmt.magic.decode('ascii')}, as {fmt.title} files do"
    text = head.removeprefix(codecs.BOM_UTF8).lstrip()
    if text.startswith(b"{"):
        flavour = _jsonl_flavour(path)
        return flavour, _json_evidence(path, REGISTRY[flavour].title)
    suffix = path.suffix.lower()
    named = next((fmt for fmt in REGISTRY.values() if suffix in fmt.suffixes and fmt.magic is None), None)
    if text and named is not None:
        return named.name, f"it is a {suffix} file whose first line is not a JSON object"
    return None


def _json_evidence(path: Path, title: str) -> str:
    """What a file that begins with '{' shows, for a format that contradicts it: its first line's keys, and that
    it is not OTLP JSON (which begins ``{"resourceSpans"`` and is claimed before this is asked)."""
    first = next(iter(jsonl_objects(path)), None)
    if first is None or not isinstance(first[1], dict):
        return (
            "its first line, which begins with '{', is neither a whole JSON object nor OTLP JSON's "
            '{"resourceSpans": …}'
        )
    obj = first[1]
    keys = [json.dumps(key)[:40] for key in list(obj)[:_KEYS_SHOWN]]
    listed = f"keys {', '.join(keys)}{', …' if len(obj) > _KEYS_SHOWN else ''}" if keys else "no key"
    otlp = (
        ' ("resourceSpans" among its keys, but not first as in OTLP JSON)'
        if "resourceSpans" in obj
        else ' and no "resourceSpans" (so not OTLP JSON)'
    )
    return f"its first line is a JSON object with {listed}{otlp}, as in {title}"
