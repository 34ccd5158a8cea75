"""Test sets from a team's own documents (``ragmeter generate``, issue 48): the corpus read as plain text
(:mod:`~ragmeter.testsets.documents`), cut into chunks with stable ids (:mod:`~ragmeter.testsets.chunking`), or a
team's own chunk file (:mod:`~ragmeter.testsets.corpus`)."""
