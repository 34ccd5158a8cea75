"""The ``ragmeter`` command: argument parsing, printing and exit codes; the work is done by the library."""

from ragmeter.cli.commands import main

__all__ = ["main"]
