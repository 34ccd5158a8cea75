"""``ragmeter calibrate-tau``: τ_sim from labelled cited sentences."""

from __future__ import annotations

import argparse
import json

from ragmeter.analysis.calibration import LABELS, calibrate_tau
from ragmeter.cli.common import Command, path_arg, settings_from, statistics_options
from ragmeter.core.errors import ConfigError
from ragmeter.io.readers import read_records
from ragmeter.models import EMBEDDER_BACKENDS
from ragmeter.report.people import render_calibration
from ragmeter.text.languages import LANGUAGE_CHOICES


def add_arguments(calibrate: argparse.ArgumentParser) -> None:
    calibrate.add_argument(
        "labelled",
        type=path_arg,
        help="JSONL/CSV with sentence, chunk (the cited chunk's text), label and, optionally, "
        f"conversation_id; a label is {LABELS}",
    )
    calibrate.add_argument(
        "--embedder",
        choices=EMBEDDER_BACKENDS,
        default="auto",
        help="the embedding backend Overlap uses (auto, the default: the language's own)",
    )
    calibrate.add_argument(
        "--language",
        choices=LANGUAGE_CHOICES,
        default="auto",
        help="the sentences' language, which chooses the embedder under --embedder auto: auto "
        "(the language most of the sentences are written in; default), en or id",
    )
    calibrate.add_argument("--precision", type=float, help="also the lowest τ whose precision reaches this")
    calibrate.add_argument(
        "--run",
        type=path_arg,
        metavar="RECORDS",
        help="a run's records: the Overlap they would have at each τ of the grid",
    )
    calibrate.add_argument("--format", choices=("table", "json"), default="table", help="report format on stdout")
    statistics_options(calibrate, ci=None)


def _calibrate(args: argparse.Namespace) -> int:
    if args.precision is not None and not 0 < args.precision <= 1:
        raise ConfigError(f"--precision {args.precision:g}: a precision lies in (0, 1]; give e.g. 0.9")
    settings = settings_from(args)
    if args.run is not None and not args.run.is_file():
        raise ConfigError(f"--run {args.run}: no such file of records")
    records = read_records(args.run) if args.run else None
    result = calibrate_tau(args.labelled, precision=args.precision, records=records, settings=settings)
    print(json.dumps(result.to_dict(), indent=2) if args.format == "json" else render_calibration(result))
    return 0


COMMAND = Command(
    "calibrate-tau", "set τ_sim from cited sentences labelled supported or not", add_arguments, _calibrate
)
