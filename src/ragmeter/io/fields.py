"""Typed access to one raw record that fails with an :class:`InputError` naming path, line and field."""

from __future__ import annotations

import math
from typing import Any, Mapping

from ragmeter.errors import InputError

__all__ = ["FieldReader"]


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


class FieldReader:
    """Reads fields of ``obj``; ``names`` maps ragmeter's field names to the source's (column mapping)."""

    def __init__(self, obj: Any, *, path: str | None, line: int | None,
                 names: Mapping[str, str] | None = None) -> None:
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

    def number(self, key: str, *, minimum: float | None = None, value: Any = ..., field: str | None = None,
               integer: bool = False) -> float | None:
        value = self.obj.get(key) if value is ... else value
        where = field or key
        if value is None:
            return None
        expected = "a whole number" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(where, f"expected {expected}, found {_kind(value)} {value!r}"[:200])
        if not math.isfinite(value) or (integer and value != int(value)):
            raise self.error(where, f"expected {expected}, found {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(where, f"expected {expected} ≥ {minimum:g}, found {value!r}")
        return float(value)

    def items(self, key: str, *, value: Any = ..., field: str | None = None) -> list[Any]:
        value = self.obj.get(key) if value is ... else value
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(field or key, f"expected a list, found {_kind(value)}")
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
