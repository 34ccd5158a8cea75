"""What a run produces: per-item values turned into run figures with intervals (the one interval policy),
seeds 000/001's paired analysis, and :class:`~ragmeter.results.run_result.EvalResult`, the per-item table and its
figures."""
