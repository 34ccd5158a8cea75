"""The ``ragmeter`` command: its subcommands, one module each in :mod:`ragmeter.cli`, and the error handling and exit
codes they share (0 done, 1 judged metrics all undefined or nothing labelled, 2 a usage or input error, 130
interrupted, 141 the reader of stdout left)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ragmeter._version import __version__
from ragmeter.cli import (
    agree,
    calibrate,
    compare,
    demo,
    estimate,
    export,
    generate,
    labels,
    metrics,
    mtrag,
    run,
    serve,
    validate,
)
from ragmeter.cli.common import JUDGE_ONLY, Command, refuse_unused, shown
from ragmeter.core.errors import RagmeterError

__all__ = ["COMMANDS", "main"]

#: Every subcommand, in the order ``ragmeter --help`` lists them: a new command is a module of ``ragmeter.cli``
#: with its ``COMMAND``, and one entry here.
COMMANDS: tuple[Command, ...] = (
    run.COMMAND,
    validate.COMMAND,
    mtrag.COMMAND,
    compare.COMMAND,
    agree.COMMAND,
    estimate.COMMAND,
    calibrate.COMMAND,
    metrics.COMMAND,
    demo.COMMAND,
    labels.COMMAND,
    generate.COMMAND,
    serve.COMMAND,
    export.COMMAND,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragmeter", description="Evaluate RAG answers offline, with intervals.")
    parser.add_argument("--version", action="version", version=f"ragmeter {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_arguments(subparsers.add_parser(command.name, help=command.help))
    return parser


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, read (``--help`` and a bad option end the process here, having written nothing)."""
    return _parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return run_parsed(parse_arguments(argv))


def run_parsed(args: argparse.Namespace) -> int:
    """The command ``args`` name, run; its errors, Ctrl-C and a closed stdout said in a line with the exit status."""
    command = next(c for c in COMMANDS if c.name == args.command)
    try:
        if hasattr(args, "judge_model") and not args.judge:
            refuse_unused(args, "without --judge", JUDGE_ONLY)
        return command.run(args)
    except RagmeterError as exc:
        print(f"error: {shown(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: {command.after_interrupt(args)}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of stdout left (ragmeter run A | head -2): every output file is already written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        print(f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return 2
    except MemoryError as exc:
        print(
            f"error: out of memory ({exc or 'an allocation failed'}): lower --n-resamples, or score fewer records "
            "at once (--limit, or the file in parts)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
