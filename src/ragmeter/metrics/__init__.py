"""Metric families. Importing this package registers every metric."""

from ragmeter.metrics import (  # noqa: F401  (registration)
    citation,
    efficiency,
    faithfulness_offline,
    judged,
    labels,
    lexical,
    mtrag,
    mtrag_judged,
    retrieval,
    rouge,
)
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
