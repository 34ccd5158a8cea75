"""Metric families. Importing this package registers every metric."""

from ragmeter.metrics import citation, efficiency, lexical, mtrag, rouge  # noqa: F401  (registration)
from ragmeter.metrics._registry import Aggregation, Metric, get_metric, list_metrics, register, resolve_metrics

__all__ = ["Aggregation", "Metric", "get_metric", "list_metrics", "register", "resolve_metrics"]
