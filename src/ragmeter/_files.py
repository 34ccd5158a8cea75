"""Files that survive a crash: written so that a reader never sees half of one, read back up to the last
complete line; and numbers as JSON can hold them.

:func:`atomic_target` is the one way ragmeter replaces a file: the content goes to a temporary file in the
same folder (so the final rename is atomic), which becomes the target only when the writing succeeded and
is removed on any failure or interrupt.
"""

from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

__all__ = ["atomic_target", "atomic_write_text", "complete_jsonl_rows", "json_number"]


@contextmanager
def atomic_target(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed to ``path`` when the block ends normally,
    removed when it raises (KeyboardInterrupt included)."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_target(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def json_number(value: float | None) -> float | None:
    """``value`` for JSON: NaN (an undefined score) becomes ``None`` (null)."""
    return None if value is None or math.isnan(value) else value


def complete_jsonl_rows(path: str | Path) -> list[Any]:
    """The rows of a JSONL file that a crash may have cut short: every complete line, parsed; a torn last
    line (no newline, or JSON or UTF-8 cut off) is removed from the file, so appending goes on cleanly."""
    path = Path(path)
    if not path.exists():
        return []
    rows: list[Any] = []
    keep = 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                rows.append(json.loads(line))
            except ValueError:
                break
            keep += len(line)
    with path.open("r+b") as handle:
        handle.truncate(keep)
    return rows
