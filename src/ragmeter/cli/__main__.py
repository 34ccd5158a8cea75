"""``python -m ragmeter.cli``: the ``ragmeter`` command, started as the ``ragmeter`` script starts it."""

import sys

from ragmeter._entry import main

if __name__ == "__main__":
    sys.exit(main())
