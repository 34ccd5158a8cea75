"""Writing a run's outputs: per-item scores as they finish, then the summary and optional Parquet."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from ragmeter.errors import MissingDependencyError
from ragmeter.result import EvalResult

__all__ = ["ItemsWriter", "write_parquet", "write_summary"]


class ItemsWriter:
    """Appends per-item rows to ``items.jsonl``, flushed and fsynced after every batch, so a crash
    keeps every finished item. Use as a context manager; pass the instance as ``on_items``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle: TextIO | None = None

    def __enter__(self) -> ItemsWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self.path.open("w", encoding="utf-8")
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


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def write_summary(result: EvalResult, path: str | Path, *, extra: dict[str, Any] | None = None) -> None:
    """Write the run figures and signatures as JSON, atomically."""
    _atomic_write(Path(path), json.dumps({**result.to_dict(), **(extra or {})}, indent=2, ensure_ascii=False))


def write_parquet(result: EvalResult, path: str | Path) -> None:
    """Write the per-item table (one column per metric, plus ``id`` and ``undefined`` reasons) as Parquet."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError("pyarrow", "parquet", "writing Parquet") from exc
    columns: dict[str, Any] = {"id": pa.array(result.item_ids, type=pa.string())}
    if any(m is not None for m in result.model_ids):
        columns["model_id"] = pa.array(result.model_ids, type=pa.string())
    for metric, values in result.scores.items():
        columns[metric] = pa.array(values, type=pa.float64(), from_pandas=True)
    reasons = [json.dumps({m: r[i] for m, r in result.undefined.items() if i in r}) for i in range(len(result))]
    columns["undefined"] = pa.array(reasons, type=pa.string())
    temporary = Path(str(path) + ".tmp")
    pq.write_table(pa.table(columns), temporary)
    os.replace(temporary, path)
