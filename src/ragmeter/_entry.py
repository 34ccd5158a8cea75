"""The ``ragmeter`` command's entry point: Ctrl-C while the command's modules load ends it quietly.

Loading takes about a second; a ``KeyboardInterrupt`` then would print a traceback from deep inside an import or
argparse. Nothing is written while modules load and the command line is read, so during that time SIGINT ends the
process at once, as the system does by default, and Python's handler comes back before the command starts its
work (which says what it kept when interrupted).
"""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from ragmeter.cli.commands import parse_arguments, run_parsed

    args = parse_arguments()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return run_parsed(args)


if __name__ == "__main__":
    sys.exit(main())
