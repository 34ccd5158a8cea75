"""``python -m ragmeter.cli``: the ``ragmeter`` command."""

import sys

from ragmeter.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
