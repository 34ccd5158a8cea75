"""The Indonesian data of the Indonesian benchmarks: IndoNLI and IDK-MRC from ``shared/data/indonesian/`` next to the
repository, and the refusal lists written for ragmeter in ``tests/text/data/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INDONESIAN = HERE.parent.parent / "shared" / "data" / "indonesian"
TEXTS = HERE.parent / "tests" / "text" / "data"


def indonli(split: str) -> list[dict[str, Any]]:
    with (INDONESIAN / "indonli" / f"{split}.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def idk_mrc(split: str) -> list[dict[str, Any]]:
    paragraphs = json.loads((INDONESIAN / "idk_mrc" / f"{split}.json").read_text(encoding="utf-8"))
    return [question for paragraph in paragraphs for question in paragraph["qas"]]


def refusal_lists() -> dict[str, list[str]]:
    return json.loads((TEXTS / "idk_refusal_templates.json").read_text(encoding="utf-8"))
