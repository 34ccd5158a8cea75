"""Writing per-item rows as they finish: one JSON line each, flushed and fsynced batch by batch."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self, TextIO

__all__ = ["ItemsWriter"]


class ItemsWriter:
    """Writes per-item rows to ``path``, flushed and fsynced after every batch, so a crash keeps every
    finished item. ``append`` keeps the rows already there (a resumed run). The file is opened with the first
    rows, after ``before_first`` ran (the run folder starts its run then): a run that writes no row creates
    nothing. Use as a context manager; pass the instance as ``on_items``."""

    def __init__(
        self, path: str | Path, *, append: bool = False, before_first: Callable[[], None] | None = None
    ) -> None:
        self.path = Path(path)
        self.append = append
        self.before_first = before_first
        self._handle: TextIO | None = None
        self._inside = False

    def __enter__(self) -> Self:
        self._inside = True
        return self

    def __call__(self, rows: list[dict[str, Any]]) -> None:
        if not self._inside:
            raise RuntimeError("ItemsWriter is called outside its 'with' block")
        if self._handle is None:
            if self.before_first is not None:
                self.before_first()
            self._handle = self._open()
        self._handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def touch(self) -> None:
        """Create the file with no row (a run that had none to write still has its items file)."""
        self._open().close()

    def _open(self) -> TextIO:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.path.open("a" if self.append else "w", encoding="utf-8")

    def __exit__(self, *exc: object) -> None:
        self._inside = False
        if self._handle is not None:
            self._handle.close()
            self._handle = None
