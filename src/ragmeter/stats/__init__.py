"""Statistics over per-item scores."""

from ragmeter.stats.intervals import bootstrap_mean_interval, bootstrap_quantile_interval, wilson_interval

__all__ = ["bootstrap_mean_interval", "bootstrap_quantile_interval", "wilson_interval"]
