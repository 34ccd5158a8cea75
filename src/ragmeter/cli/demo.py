"""``ragmeter demo``: the bundled demo data, copied into a folder."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ragmeter.cli.common import Command, path_arg
from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, writing
from ragmeter.io.demo import DEMO_FILES, demo_file


def add_arguments(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("folder", type=path_arg, help="where to copy them (created if missing)")


def _demo(args: argparse.Namespace) -> int:
    folder: Path = args.folder
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file: give a folder to copy the demo into")
    if folder.is_symlink() and not folder.exists():
        raise ConfigError(
            f"{folder} is a symlink to {os.readlink(folder)}, which is not there: give a folder to copy "
            "the demo into (it is created if missing)"
        )
    taken = [name for name in DEMO_FILES if os.path.lexists(folder / name)]
    if taken:
        raise ConfigError(f"{folder} already has {', '.join(taken)}: choose another folder, or move them away")
    outputs = Outputs()
    targets = {name: outputs.file(folder / name, flag="") for name in DEMO_FILES}
    for name, target in targets.items():
        with writing(target) as temporary:
            temporary.write_bytes(demo_file(name))
    print(f"{folder}: {', '.join(DEMO_FILES)} (DEMO.md describes them)")
    return 0


COMMAND = Command(
    "demo",
    "copy the bundled demo data and two annotators' labels of it into a folder, to try every command on",
    add_arguments,
    _demo,
)
