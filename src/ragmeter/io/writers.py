"""Writing per-item rows as they finish: one JSON line each, flushed and fsynced batch by batch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

__all__ = ["ItemsWriter"]


class ItemsWriter:
    """Writes per-item rows to ``path``, flushed and fsynced after every batch, so a crash keeps every
    finished item. ``append`` keeps the rows already there (a resumed run). Use as a context manager;
    pass the instance as ``on_items``."""

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = Path(path)
        self.append = append
        self._handle: TextIO | None = None

    def __enter__(self) -> ItemsWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self.path.open("a" if self.append else "w", encoding="utf-8")
        return self

    def __call__(self, rows: list[dict[str, Any]]) -> None:
        if self._handle is None:
            raise RuntimeError("ItemsWriter is called outside its 'with' block")
        self._handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()
