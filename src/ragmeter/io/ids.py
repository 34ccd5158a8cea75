"""The one check across a file's records: an id may appear once for each model (MT-RAG's files hold each task once
per responding model). Files (:mod:`ragmeter.io.readers`), framework objects (:mod:`ragmeter.io.objects`) and the
Ray engine's pieces report a repeat in the same words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ragmeter.core.errors import InputError
from ragmeter.core.records import Record

__all__ = ["repeated_id", "unique_ids"]


def repeated_id(item_id: str, model_id: str | None, first: str, *, path: str, line: int) -> InputError:
    """The error of a record whose id (for its model) an earlier record, at ``first``, already has."""
    of_model = f" for model_id {model_id!r}" if model_id is not None else ""
    return InputError(
        f"repeats the id {item_id!r}{of_model} of {first}: ids must be unique per model",
        path=path,
        line=line,
        field="id",
    )


def unique_ids(path: Path, items: Iterator[tuple[int, Record | InputError]]) -> Iterator[Record | InputError]:
    """``items`` (line, record or error) in order, a record whose id its model already had replaced by the
    error naming the line of the first."""
    seen: dict[tuple[str, str | None], int] = {}
    for number, item in items:
        if isinstance(item, Record):
            first = seen.setdefault((item.id, item.model_id), number)
            if first != number:
                item = repeated_id(item.id, item.model_id, f"line {first}", path=str(path), line=number)
        yield item
