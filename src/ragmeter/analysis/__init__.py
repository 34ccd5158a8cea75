"""Reading finished runs: two runs compared item by item, τ_sim calibrated from labelled sentences."""
