"""The ``ragmeter`` command: argument parsing, printing and exit codes; the work is done by the library."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The ``ragmeter`` command (:func:`ragmeter.cli.commands.main`). Its modules load when it is called, not when
    this package is imported, so that ``python -m ragmeter.cli`` loads them as the ``ragmeter`` script does, with
    Ctrl-C ending it quietly meanwhile (:mod:`ragmeter._entry`)."""
    from ragmeter.cli.commands import main as command

    return command(argv)
