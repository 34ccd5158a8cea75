"""``ragmeter validate``: check a file's records without scoring them."""

from __future__ import annotations

import argparse

from ragmeter.cli.common import Command, check_input, input_options, path_arg


def add_arguments(validate: argparse.ArgumentParser) -> None:
    validate.add_argument("file", type=path_arg)
    input_options(validate)


def _validate(args: argparse.Namespace) -> int:
    n_valid = check_input(args, args.file)
    if n_valid >= 0:
        print(f"{args.file}: {n_valid} valid record(s)")
    return 0 if n_valid >= 0 else 2


COMMAND = Command("validate", "check a file's records without scoring them", add_arguments, _validate)
