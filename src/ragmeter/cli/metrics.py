"""``ragmeter metrics``: every metric with its range and the fields it needs, as a table that fits the terminal."""

from __future__ import annotations

import shutil
import textwrap

from ragmeter.cli.common import Command
from ragmeter.metrics import DEFAULT_CUTOFF, list_metrics

HEADER = ("metric", "family", "range", "needs", "description")
#: Columns are set apart by this gap; a cell never reaches the next column.
GAP = "  "
#: The widest the ``needs`` column grows; longer lists wrap at their commas.
NEEDS_WIDTH = 26
#: The narrowest description that sits beside the other columns; on a narrower terminal it goes beneath them.
DESCRIPTION_WIDTH = 30
#: How far a description beneath its row is indented.
INDENT = "    "


def metrics_table(width: int) -> list[str]:
    """The lines of the table for a terminal ``width`` columns wide: the first four columns aligned and wrapped
    within them, the description beside them where at least :data:`DESCRIPTION_WIDTH` columns are left, else on
    lines of its own beneath its row."""
    rows = []
    for m in list_metrics():
        high = "∞" if m.value_range[1] is None else f"{m.value_range[1]:g}"
        rows.append((m.name, m.family, f"[{m.value_range[0]:g}, {high}]", ", ".join(m.requirements), m.description))
    widths = [max(len(HEADER[i]), *(len(row[i]) for row in rows)) for i in range(3)]
    widths.append(min(NEEDS_WIDTH, max(len(row[3]) for row in rows)))
    start = sum(widths) + len(GAP) * len(widths)
    beside = width - start >= DESCRIPTION_WIDTH
    lines = [(_line(HEADER[:4], widths) + (GAP + HEADER[4] if beside else "")).rstrip()]
    for *first, needs, description in rows:
        needs_lines = textwrap.wrap(needs, widths[3], break_on_hyphens=False) or [""]
        notes = textwrap.wrap(
            description,
            width - start if beside else max(width - len(INDENT), DESCRIPTION_WIDTH),
            break_on_hyphens=False,
        )
        height = max(len(needs_lines), len(notes)) if beside else len(needs_lines)
        for k in range(height):
            cells = (*(first if k == 0 else ("",) * 3), needs_lines[k] if k < len(needs_lines) else "")
            note = notes[k] if beside and k < len(notes) else ""
            lines.append((_line(cells, widths) + (GAP + note if note else "")).rstrip())
        if not beside:
            lines += [INDENT + note for note in notes]
    return lines


def _line(cells: tuple[str, ...], widths: list[int]) -> str:
    return GAP.join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True))


def _metrics() -> int:
    width = shutil.get_terminal_size().columns
    print("\n".join(metrics_table(width)))
    print(
        "\n"
        + textwrap.fill(
            f"Rank metrics take any cutoff (ndcg@5); a family name gives @{DEFAULT_CUTOFF}, 'retrieval@5' gives @5.",
            max(width, DESCRIPTION_WIDTH),
        )
    )
    return 0


COMMAND = Command(
    "metrics", "list every metric with its range and the fields it needs", lambda parser: None, lambda args: _metrics()
)
