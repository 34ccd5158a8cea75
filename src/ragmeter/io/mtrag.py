"""Moved to :mod:`ragmeter.io.formats.mtrag` (issue 28); this path is that very module until its importers move."""

import sys

from ragmeter.io.formats import mtrag

sys.modules[__name__] = mtrag
