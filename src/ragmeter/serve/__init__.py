"""``ragmeter serve``: production traces received over OTLP/HTTP, stored, scored as they complete (issue 49)."""
