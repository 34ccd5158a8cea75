"""MT-RAG rows for the pipeline tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def mtrag_row(
    task_id: str,
    prediction: str,
    *,
    targets: Sequence[str] | None = ("the reference",),
    contexts: Sequence[str] | None = ("a passage",),
    answerability: str | None = "ANSWERABLE",
    model_id: str = "model-a",
    conversation_id: str | None = None,
    metrics: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An MT-RAG generation-task row; ``targets=None`` leaves the key out."""
    row: dict[str, Any] = {
        "task_id": task_id,
        "conversation_id": conversation_id or task_id.split("<::>")[0],
        "model_id": model_id,
        "input": [{"speaker": "user", "text": f"Question of {task_id}?"}],
    }
    if contexts is not None:
        row["contexts"] = [{"document_id": f"doc-{i}", "text": text} for i, text in enumerate(contexts)]
    if targets is not None:
        row["targets"] = [{"text": text} for text in targets]
    row["predictions"] = [{"text": prediction}]
    if answerability is not None:
        row["answerability"] = [answerability]
    if metrics is not None:
        row["metrics"] = metrics
    return row


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
