"""Typed access to one raw record that fails with an :class:`InputError` naming path, line and field."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from typing import Any

from ragmeter.core.errors import InputError

__all__ = [
    "CSV_CELL_LIMIT",
    "MAX_CHUNKS",
    "MAX_LATENCY_MS",
    "MAX_NUGGETS",
    "MAX_TEXT_CHARS",
    "MAX_TOKENS_PER_CALL",
    "FieldReader",
    "allow_long_csv_cells",
    "exact_number",
]

# What one record may hold. Scoring keeps several copies of each text (normalised, tokenised, embedded
# token by token), so one 50 MB answer took 8 GB of memory: the bounds stop such a record where it enters,
# with a message, instead of deep in a metric. They sit far above any real RAG record (a long report is
# about 100,000 characters; a retriever returns tens of chunks).
MAX_TEXT_CHARS = 1_000_000
MAX_CHUNKS = 10_000
# TREC's assessors wrote up to about 30 nuggets a question; a thousand is a list that is not nuggets.
MAX_NUGGETS = 1_000
# Numbers past these are logging bugs (an overflowed counter, a timestamp in the latency column) that
# would print as 300-digit totals: no LLM call takes a billion tokens, and no answer a week.
MAX_TOKENS_PER_CALL = 1_000_000_000
MAX_LATENCY_MS = 7 * 24 * 3600 * 1000
# Python's csv refuses a cell over 131,072 characters, below MAX_TEXT_CHARS and below what ragmeter's own annotation
# templates write (a chunk's text, a JSON list of contexts). 2**31 − 1 is the largest limit every platform's C long
# holds (sys.maxsize overflows on Windows).
CSV_CELL_LIMIT = 2**31 - 1


def allow_long_csv_cells() -> None:
    """Raise the csv module's cell limit to :data:`CSV_CELL_LIMIT`, for every CSV reader of ragmeter to call before
    it reads. The limit is process-wide; it is only ever raised."""
    if csv.field_size_limit() < CSV_CELL_LIMIT:
        csv.field_size_limit(CSV_CELL_LIMIT)


def exact_number(value: float) -> str:
    """``value`` in full, with thousands separators, for a message that sets it against a bound: six significant
    digits would print 604,800,001 as 6.048e+08, which reads as the bound 604,800,000 itself.

    >>> exact_number(604_800_001), exact_number(604_800_000.5), exact_number(1e9 + 1), exact_number(1e308)
    ('604,800,001', '604,800,000.5', '1,000,000,001', '1e+308')
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return f"{value:,.0f}"
    return f"{value:,}"


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


class FieldReader:
    """Reads fields of ``obj``; ``names`` maps ragmeter's field names to the source's (column mapping)."""

    def __init__(self, obj: Any, *, path: str | None, line: int | None, names: Mapping[str, str] | None = None) -> None:
        self.path, self.line, self.names = path, line, names or {}
        if not isinstance(obj, dict):
            raise self.error(None, f"expected a JSON object per record, found {_kind(obj)}")
        self.obj: dict[str, Any] = obj

    def name(self, field: str) -> str:
        head, dot, rest = field.partition(".")
        base, bracket, index = head.partition("[")
        return self.names.get(base, base) + bracket + index + dot + rest

    def error(self, field: str | None, message: str) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=self.name(field) if field else None)

    def has(self, key: str) -> bool:
        return self.obj.get(key) is not None

    def raw(self, key: str) -> Any:
        return self.obj.get(key)

    def text(self, key: str, *, required: bool = False, value: Any = ..., field: str | None = None) -> str | None:
        value = self.obj.get(key) if value is ... else value
        where = field or key
        if value is None:
            if required:
                raise self.error(where, "missing: expected a string")
            return None
        if not isinstance(value, str):
            raise self.error(where, f"expected a string, found {_kind(value)}")
        if len(value) > MAX_TEXT_CHARS:
            raise self.error(
                where,
                f"holds {len(value):,} characters, more than the {MAX_TEXT_CHARS:,} one text "
                "may hold: shorten it, or leave the record out",
            )
        return value

    def identifier(self, key: str, *, value: Any = ..., field: str | None = None, required: bool = True) -> str | None:
        """A non-empty id: strings are kept, integers converted."""
        value = self.obj.get(key) if value is ... else value
        where = field or key
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise self.error(where, "missing: expected a non-empty id (string or integer)")
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(where, f"expected an id (string or integer), found {_kind(value)}")
        return str(value)

    def number(
        self,
        key: str,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        value: Any = ...,
        field: str | None = None,
        integer: bool = False,
        unit: str = "",
    ) -> float | None:
        """A finite number within ``[minimum, maximum]`` (either bound optional), or ``None`` when absent;
        ``unit`` says what the maximum means (``"7 days in ms"``) in the message."""
        value = self.obj.get(key) if value is ... else value
        where = field or key
        if value is None:
            return None
        expected = "a whole number" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(where, f"expected {expected}, found {_kind(value)} {value!r}"[:200])
        if isinstance(value, int) and abs(value) > 1e300:  # JSON integers may have more digits than a float holds
            raise self.error(where, f"expected {expected} below 1e300, found {len(str(abs(value)))} digits")
        number = float(value)
        if not math.isfinite(number) or (integer and number != int(number)):
            raise self.error(where, f"expected {expected}, found {value!r}")
        if minimum is not None and number < minimum:
            raise self.error(where, f"expected {expected} ≥ {minimum:g}, found {value!r}")
        if maximum is not None and number > maximum:
            bound = f"{maximum:,.0f} ({unit})" if unit else f"{maximum:,.0f}"
            raise self.error(
                where,
                f"expected {expected} ≤ {bound}, found {exact_number(value)}: a value this large "
                "is a logging error; check how this field was recorded",
            )
        return number

    def items(
        self, key: str, *, value: Any = ..., field: str | None = None, most: int | None = None, what: str = "items"
    ) -> list[Any]:
        """A list (``[]`` when absent) of at most ``most`` ``what``."""
        value = self.obj.get(key) if value is ... else value
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(field or key, f"expected a list, found {_kind(value)}")
        if most is not None and len(value) > most:
            raise self.error(
                field or key,
                f"holds {len(value):,} {what}, more than the {most:,} one record may "
                f"hold: keep the first {most:,} (the top-ranked ones)",
            )
        return value

    def mapping(self, key: str, *, value: Any = ..., field: str | None = None) -> dict[str, Any]:
        value = self.obj.get(key) if value is ... else value
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(field or key, f"expected an object, found {_kind(value)}")
        return value

    def labels(self, key: str, known: tuple[str, ...], *, value: Any = ..., field: str | None = None) -> dict[str, Any]:
        """An object of labels where each ``known`` label is 0, 1, true, false or null (annotators tied),
        stored as 0, 1 or ``None``; other labels are kept as given."""
        where = field or key
        labels = dict(self.mapping(key, value=value, field=where))
        for name in known:
            if name in labels:
                labels[name] = self.binary(labels[name], f"{where}.{name}")
        return labels

    def binary(self, value: Any, field: str) -> int | None:
        """0 or 1 (JSON booleans accepted), or ``None`` for null."""
        if value is None:
            return None
        if value in (0, 1) and not isinstance(value, str):
            return int(value)
        raise self.error(field, f"expected 0 or 1 (or null where annotators tied), found {value!r}"[:200])

    def grades(self, key: str) -> dict[str, int] | None:
        """An object of whole-number grades ≥ 0 by id (qrels), or ``None`` when absent."""
        if not self.has(key):
            return None
        grades = {}
        for doc_id, grade in self.mapping(key).items():
            value = self.number("", value=grade, field=f"{key}.{doc_id}", minimum=0, integer=True)
            grades[doc_id] = int(value)  # type: ignore[arg-type]
        return grades
