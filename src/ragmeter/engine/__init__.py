"""Scoring records: the run context, the batch loop of :func:`~ragmeter.engine.evaluation.evaluate` (with the one
resume), and the Ray engine in :mod:`ragmeter.engine.ray`."""
