"""What the commands share: the command type, the options several commands take, the input check's printing,
``Settings`` from options, and error text for a terminal."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, TextIO

from ragmeter.core.errors import ConfigError
from ragmeter.core.files import Outputs, Target, atomic_write_text
from ragmeter.core.settings import CiMethod, Settings
from ragmeter.io.formats import FORMATS, REGISTRY, format_help
from ragmeter.io.readers import FileCheck, check_file, parse_column_map
from ragmeter.report.junit import JunitSuite, render_junit
from ragmeter.report.terminal import visible
from ragmeter.text.idk import IdkDetector


@dataclass(frozen=True)
class Command:
    """A subcommand: its name and one-line help, ``add_arguments(parser)``, ``run(args) -> exit code``, and what
    an interrupted run of it kept (``after_interrupt(args)``, printed after Ctrl-C)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    after_interrupt: Callable[[argparse.Namespace], str] = lambda args: "nothing was written"


def choice_values(choices: type[StrEnum]) -> list[str]:
    """An option's choices as their plain values, so that argparse names them as a user types them
    (``'bca', 'percentile'``) in its help and in the error for a choice it does not know."""
    return [member.value for member in choices]


def setting_option(command: argparse.ArgumentParser, flag: str, setting: str, help: str) -> None:
    """The option ``flag`` of the ``Settings`` field ``setting``, one of an enum's values: its choices as typed
    (:func:`choice_values`), the field's default."""
    default = getattr(Settings, setting)
    command.add_argument(flag, dest=setting, choices=choice_values(type(default)), default=default, help=help)


def path_arg(text: str) -> Path:
    """A file or folder option's value: an empty one (``--html "$UNSET"``) is an error, not the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (an unset variable?): give a file or folder name")
    return Path(text)


def report_stream(*pages: Target | None) -> TextIO:
    """Where a command prints its text report: standard error when one of its ``pages`` goes to standard output
    (``--html /dev/stdout``), so that the page is all that stdout carries; else standard output."""
    return sys.stderr if any(page is not None and page.stdout for page in pages) else sys.stdout


def overwrite_option(command: argparse.ArgumentParser, what: str) -> None:
    command.add_argument(
        "--overwrite", action="store_true", help=f"replace {what} (refused without it; an input is never replaced)"
    )


def statistics_options(command: argparse.ArgumentParser, *, ci: str | None = Settings.ci_method) -> None:
    """The bootstrap's options; ``ci``: the default interval method, ``None`` where only percentile applies."""
    command.add_argument("--n-resamples", type=int, default=Settings.n_resamples, help="bootstrap resamples (2000)")
    if ci is not None:
        command.add_argument(
            "--ci", dest="ci_method", choices=choice_values(CiMethod), default=ci, help=f"bootstrap interval ({ci})"
        )
    command.add_argument("--confidence", type=float, default=Settings.confidence, help="interval level (0.95)")
    command.add_argument("--seed", type=int, default=Settings.seed, help="bootstrap seed (0)")


def input_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--input-format", choices=FORMATS, default="auto", help=format_help())
    command.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="CSV/Parquet column for a record field, e.g. --map question=query (repeatable)",
    )
    for fmt in REGISTRY.values():
        for option in fmt.options:
            command.add_argument(
                f"--{fmt.name}-{option.name}", choices=option.choices, help=f"{fmt.title}: {option.help}"
            )
    command.add_argument("--skip-invalid", action="store_true", help="score the valid records, list the others")
    command.add_argument("--max-errors", type=int, default=50, help="bad records listed at most (50)")


def check_input(args: argparse.Namespace, path: Path) -> int:
    """Report every bad record (up to --max-errors); return the number of valid records, or -1 to stop."""
    return report_check(
        args,
        check_file(
            path,
            format=args.input_format,
            column_map=parse_column_map(args.map),
            max_errors=args.max_errors,
            options=format_options(args),
        ),
    )


def format_options(args: argparse.Namespace) -> dict[str, str]:
    """The input format options given (``--otel-retrieval all``), keyed as
    :func:`~ragmeter.io.formats.resolve_options` takes them."""
    return {
        f"{fmt.name}-{option.name}": value
        for fmt in REGISTRY.values()
        for option in fmt.options
        if (value := getattr(args, f"{fmt.name}_{option.name}", None)) is not None
    }


def report_check(args: argparse.Namespace, check: FileCheck) -> int:
    """Print a check's bad records; the number of valid records, or -1 to stop."""
    if check.file_error is not None:
        print(f"error: {check.file_error}", file=sys.stderr)
        return -1
    for error in check.errors:
        print(f"error: {error}", file=sys.stderr)
    if check.n_invalid > len(check.errors):
        print(f"… and {check.n_invalid - len(check.errors)} more bad records", file=sys.stderr)
    if check.n_invalid and not args.skip_invalid:
        print(
            f"{check.n_invalid} bad record(s), {check.n_valid} valid: fix them, or pass --skip-invalid "
            "to score the valid ones",
            file=sys.stderr,
        )
        return -1
    if check.n_invalid:
        print(f"skipped {check.n_invalid} bad record(s) listed above; scoring {check.n_valid}", file=sys.stderr)
    if check.n_valid == 0:
        print("no valid record to score", file=sys.stderr)
        return -1
    return check.n_valid


def settings_from(args: argparse.Namespace, **fixed: Any) -> Settings:
    """The command's ``Settings``: each option whose destination is a field of ``Settings`` (``--ci`` →
    ``ci_method``), ``--idk-patterns`` as the IDK detector, and the ``fixed`` values of a command with no option
    for them."""
    given = {f.name: getattr(args, f.name) for f in fields(Settings) if hasattr(args, f.name)}
    if getattr(args, "idk_patterns", None):
        given["idk"] = IdkDetector.from_file(args.idk_patterns)
    return Settings(**{**given, **fixed})


def shown(message: object) -> str:
    """``message`` for the terminal: control characters from file names or ids written as escapes, lines kept."""
    return "\n".join(visible(line) for line in str(message).split("\n"))


def refuse_unused(args: argparse.Namespace, condition: str, names: Iterable[str]) -> None:
    """A ConfigError naming the first of the options ``names`` that was given though ``condition`` makes it do
    nothing (an option left at its default was not given)."""
    for name in names:
        value = getattr(args, name, None)
        if value is not None and value is not False and value != OPTION_DEFAULTS.get(name):
            raise ConfigError(
                f"--{name.replace('_', '-')} does nothing {condition}: leave it out"
                + (", or add --judge" if condition == "without --judge" else "")
            )


#: The judge options that only matter with --judge, and their parser defaults.
JUDGE_ONLY = (
    "judge_model",
    "judge_base_url",
    "judge_model_file",
    "judge_claims",
    "judge_layout",
    "judge_bounds",
    "judge_concurrency",
    "judge_timeout",
    "judge_cache",
    "no_judge_cache",
    "price_prompt",
    "price_completion",
    "judge_api_key_env",
    "judge_max_attempts",
    "judge_backoff",
    "judge_seed",
    "rb_llm_unparsed",
)
OPTION_DEFAULTS = {
    "judge_api_key_env": "OPENAI_API_KEY",
    "judge_max_attempts": 6,
    "judge_backoff": 1.0,
    "judge_seed": 0,
    "alpha": 0.05,
    "max_undefined": 0.2,
    "seed": 0,
}


def gate_options(command: argparse.ArgumentParser) -> None:
    """Where a gate's verdict goes besides stdout: JUnit XML, and a markdown summary appended to a file."""
    command.add_argument(
        "--junit",
        type=path_arg,
        metavar="FILE",
        help="also write the gate's verdicts as JUnit XML (one test case per rule) for a CI system's test report",
    )
    command.add_argument(
        "--summary-file",
        type=path_arg,
        metavar="FILE",
        help="append the gate's verdict and the tables as markdown to FILE, e.g. "
        '"$GITHUB_STEP_SUMMARY" (made if missing; never replaced)',
    )


@dataclass(frozen=True)
class GateReports:
    """The gate's report files: JUnit XML and the appended markdown summary (``None``: not asked for)."""

    junit: Target | None
    summary: Target | None


def gate_outputs(outputs: Outputs, args: argparse.Namespace) -> GateReports:
    """The gate's report files, checked before any work."""
    junit = outputs.file(args.junit, flag="--junit") if args.junit else None
    summary = outputs.file(args.summary_file, flag="--summary-file", append=True) if args.summary_file else None
    return GateReports(junit, summary)


def write_gate_reports(reports: GateReports, suites: list[JunitSuite], markdown: str) -> None:
    """Write the JUnit suites and append the markdown, where asked for."""
    if reports.junit is not None:
        atomic_write_text(reports.junit, render_junit(suites))
    if reports.summary is not None:
        atomic_write_text(reports.summary, markdown.rstrip() + "\n\n")
