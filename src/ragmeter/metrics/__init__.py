"""Metric families. Importing this package registers every metric."""

from ragmeter.metrics import citation, efficiency, judged, labels, lexical, mtrag, retrieval, rouge  # noqa: F401  (registration)
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

__all__ = ["DEFAULT_CUTOFF", "Aggregation", "Metric", "Noted", "Undefined", "get_metric", "list_metrics",
           "parse_cutoff", "register", "register_cutoff", "resolve_metrics"]
