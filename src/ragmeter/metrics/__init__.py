"""Metric families. Importing this package registers every metric."""

# Registration, in the order the families have always registered (the order of `ragmeter metrics`).
from ragmeter.metrics import citation, efficiency, faithfulness_offline, judged, labels, lexical  # noqa: F401, I001
from ragmeter.metrics.mtrag import algorithmic, judged as mtrag_judged  # noqa: F401
from ragmeter.metrics import retrieval, rouge  # noqa: F401
from ragmeter.metrics import claim_level  # noqa: F401
from ragmeter.metrics._registry import (
    DEFAULT_CUTOFF,
    Aggregation,
    Metric,
    Noted,
    Undefined,
    get_metric,
    list_metrics,
    parse_cutoff,
    register,
    register_cutoff,
    resolve_metrics,
)

__all__ = [
    "DEFAULT_CUTOFF",
    "Aggregation",
    "Metric",
    "Noted",
    "Undefined",
    "get_metric",
    "list_metrics",
    "parse_cutoff",
    "register",
    "register_cutoff",
    "resolve_metrics",
]
