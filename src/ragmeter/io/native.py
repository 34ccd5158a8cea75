"""Moved to :mod:`ragmeter.io.formats.native` (issue 28); this path is that very module until its importers move."""

import sys

from ragmeter.io.formats import native

sys.modules[__name__] = native
