"""``ragmeter metrics``: every metric with its range and the fields it needs."""

from __future__ import annotations

from ragmeter.cli.common import Command
from ragmeter.metrics import DEFAULT_CUTOFF, list_metrics


def _metrics() -> int:
    metrics = list_metrics()
    width = max(len(m.name) for m in metrics) + 2
    print(f"{'metric':<{width}}{'family':<12}{'range':<12}{'needs':<22}description")
    for m in metrics:
        high = "∞" if m.value_range[1] is None else f"{m.value_range[1]:g}"
        print(f"{m.name:<{width}}{m.family:<12}{f'[{m.value_range[0]:g}, {high}]':<12}"
              f"{','.join(m.requirements):<22}{m.description}")
    print(f"\nRank metrics take any cutoff (ndcg@5); a family name gives @{DEFAULT_CUTOFF}, 'retrieval@5' gives @5.")
    return 0


COMMAND = Command("metrics", "list every metric with its range and the fields it needs", lambda parser: None,
                  lambda args: _metrics())
