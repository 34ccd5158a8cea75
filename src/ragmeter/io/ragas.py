"""Moved to :mod:`ragmeter.io.formats.ragas` (issue 28); this path is that very module until its importers move."""

import sys

from ragmeter.io.formats import ragas

sys.modules[__name__] = ragas
