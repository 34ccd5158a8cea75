"""MT-RAG's released files, which several benchmarks read (shared/data/mtrag next to the repository)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[2] / "shared/data/mtrag"
HUMAN_EVAL_TASKS = DATA_DIR / "human_eval_tasks.jsonl"
REFERENCE_TASKS = DATA_DIR / "mtragun_reference_tasks.jsonl"


def missing(name: str, tag: str, *paths: Path) -> dict[str, Any] | None:
    """The 'skipped' result of benchmark ``name`` when a file it reads is absent, else ``None``."""
    absent = [str(path) for path in paths if not path.is_file()]
    if not absent:
        return None
    message = (
        f"skipped: {', '.join(absent)} not found (the MT-RAG data lives in shared/data/mtrag next to the repository)"
    )
    print(f"[{tag}] {message}")
    return {"name": name, "skipped": message}


def prediction_reference_pairs(path: Path = HUMAN_EVAL_TASKS) -> list[tuple[str, str]]:
    """(predictions[0].text, targets[0].text) of every task that has both."""
    pairs = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            task = json.loads(line)
            if task.get("predictions") and task.get("targets"):
                pairs.append((task["predictions"][0]["text"], task["targets"][0]["text"]))
    return pairs
