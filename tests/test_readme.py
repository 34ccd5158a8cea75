"""The README's metric table agrees with the registry: every metric is there, with what it needs."""

from __future__ import annotations

import re
from pathlib import Path

from ragmeter.metrics import DEFAULT_CUTOFF, get_metric, list_metrics

README = Path(__file__).resolve().parents[1] / "README.md"


def table_rows() -> dict[str, str]:
    """metric name (rank metrics at the default cutoff) → its 'needs' cell."""
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `") and line.count(" | ") == 4:
            cells = [cell.strip(" |") for cell in line.split(" | ")]
            for name in re.findall(r"`([^`]+)`", cells[0]):
                rows[name.replace("@K", f"@{DEFAULT_CUTOFF}")] = cells[-1]
    return rows


def test_every_registered_metric_is_in_the_table() -> None:
    assert set(table_rows()) == {m.name for m in list_metrics()}


def test_the_needs_column_is_what_the_registry_requires() -> None:
    wrong = {name: (cell, ", ".join(get_metric(name).requirements)) for name, cell in table_rows().items()
             if cell != ", ".join(get_metric(name).requirements)}
    assert not wrong
