"""Test sets from a team's own documents (``ragmeter generate``, issue 48): the corpus read as plain text
(:mod:`~ragmeter.generate.documents`) and cut into chunks with stable ids (:mod:`~ragmeter.generate.chunking`)."""
