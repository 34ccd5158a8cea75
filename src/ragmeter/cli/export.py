"""``ragmeter export``: the records of a window of ``ragmeter serve``'s store, as a JSONL file of ragmeter's input
format, so that ``ragmeter run`` gives it a run folder and ``compare``, ``estimate``, ``agree`` and the HTML report
work on production data unchanged."""

from __future__ import annotations

import argparse
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

from ragmeter.cli.common import Command, overwrite_option, path_arg
from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, atomic_write_text
from ragmeter.serve.stores import open_store

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(text: str, flag: str = "--last") -> float:
    """A duration written ``90s``, ``30m``, ``6h`` or ``7d``, in seconds.

    >>> seconds("30m"), seconds("2d")
    (1800.0, 172800.0)
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if match is None:
        raise ConfigError(f"{flag} {text!r} is not a duration: write a number and s, m, h or d (30m, 6h, 7d)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def store_arg(text: str) -> str | Path:
    """A ``--store``: a ``postgresql://`` URL as it is, else a file name."""
    return text if text.startswith(("postgresql://", "postgres://")) else path_arg(text)


def moment(text: str, flag: str) -> float:
    """An ISO 8601 time (UTC where it names no offset) as seconds since the epoch."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ConfigError(f"{flag} {text!r} is not an ISO 8601 time (2026-11-28T14:00, with an offset or UTC)") from exc
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def add_arguments(export: argparse.ArgumentParser) -> None:
    export.add_argument(
        "--store", type=store_arg, required=True, help="the SQLite file or postgresql:// URL 'ragmeter serve' writes"
    )
    window = export.add_mutually_exclusive_group(required=True)
    window.add_argument("--last", help="the traces scored in the last 30m, 6h, 7d, …")
    window.add_argument("--since", help="the traces scored from this ISO 8601 time (UTC where it names no offset)")
    export.add_argument("--until", help="… and before this one (with --since; default: now)")
    export.add_argument("-o", "--output", type=path_arg, required=True, help="the JSONL file of records to write")
    overwrite_option(export, "an existing OUTPUT")


def _export(args: argparse.Namespace) -> int:
    if args.until is not None and args.since is None:
        raise ConfigError("--until closes a window opened by --since")
    now = time.time()
    since = now - seconds(args.last) if args.last is not None else moment(args.since, "--since")
    until = moment(args.until, "--until") if args.until is not None else now
    inputs = [args.store] if isinstance(args.store, Path) else []
    target = Outputs(inputs, overwrite=args.overwrite).file(args.output, flag="-o")
    with open_store(args.store, read_only=True) as store:
        records = list(store.records(since, until))
        without = sum(1 for outcome in store.scored(since, until) if outcome.record is None)
    start, end = datetime.fromtimestamp(since, UTC), datetime.fromtimestamp(until, UTC)
    span = f"{start:%Y-%m-%d %H:%M:%S} to {end:%H:%M:%S} UTC"
    if not records:
        print(f"{args.store}: no trace scored from {span} has a record ({without} without one): nothing written")
        return 1
    atomic_write_text(target, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    print(
        f"{args.output}: {len(records)} records of the traces scored from {span}"
        + (f" ({without} traces without a record left out: 'ragmeter serve' stored why)" if without else "")
    )
    return 0


COMMAND = Command(
    "export",
    "write the records of a window of 'ragmeter serve''s store as a JSONL file for 'ragmeter run'",
    add_arguments,
    _export,
)
