"""``ragmeter serve``: an OTLP/HTTP receiver that stores production traces and scores each as it completes."""

from __future__ import annotations

import argparse
import contextlib
from importlib import util
from pathlib import Path

from ragmeter.analysis.compare import load_run
from ragmeter.analysis.gate import parse_rule
from ragmeter.cli import judge_options
from ragmeter.cli.common import Command, path_arg, refuse_unused
from ragmeter.cli.export import seconds, store_arg
from ragmeter.core.errors import ConfigError, MissingDependencyError
from ragmeter.core.files import cache_dir
from ragmeter.core.settings import Settings
from ragmeter.io.run_folder import files_read
from ragmeter.judges import open_judge
from ragmeter.metrics import resolve_metrics
from ragmeter.serve.app import MAX_BACKLOG, create_app
from ragmeter.serve.budget import BudgetedBackend
from ragmeter.serve.drops import MIN_TRACES, DropWatch, WatchSettings
from ragmeter.serve.forward import Forwarder, check_url
from ragmeter.serve.scorer import QUIET_S, Scorer
from ragmeter.serve.stores import open_store

#: OTLP/HTTP's registered port: an exporter left at its default endpoint sends here.
OTLP_HTTP_PORT = 4318
DEFAULT_WINDOW, DEFAULT_EVERY = "1h", "5m"


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--store",
        type=store_arg,
        default=Path("ragmeter-serve.sqlite"),
        help="where received traces and their scores are kept: a SQLite file (created if missing; "
        "ragmeter-serve.sqlite), or a postgresql:// URL (several serve processes may share it)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1; 0.0.0.0 for every one)")
    serve.add_argument("--port", type=int, default=OTLP_HTTP_PORT, help=f"port ({OTLP_HTTP_PORT}, OTLP/HTTP's)")
    serve.add_argument(
        "--metrics",
        help="comma-separated metric or family names scored on every trace (default: citation,lexical,efficiency)",
    )
    serve.add_argument(
        "--quiet",
        type=float,
        default=QUIET_S,
        help=f"seconds without a new span after which a trace whose root has not ended is scored as "
        f"it is ({QUIET_S:g})",
    )
    serve.add_argument(
        "--max-backlog",
        type=int,
        default=MAX_BACKLOG,
        help=f"traces waiting to be scored from which exporters are asked to retry later ({MAX_BACKLOG})",
    )
    serve.add_argument(
        "--judge-sample",
        type=float,
        default=0.0,
        help="share of the traces also scored with the judged metrics, drawn by trace id (needs --judge; 0)",
    )
    serve.add_argument(
        "--judge-budget",
        type=int,
        help="the judge's tokens an hour at most, prompt and completion (no request may pass it)",
    )
    serve.add_argument(
        "--judged", default="judged", help="the metrics or families scored on the judge's sample (judged)"
    )
    serve.add_argument(
        "--forward",
        metavar="URL",
        help="send each scored trace's ragmeter.evaluation span to this OTLP/HTTP traces endpoint "
        "(a Collector's or Phoenix's …/v1/traces), so the scores show beside the traces there",
    )
    judge_options.add_judge_options(serve, title="LLM judge (scores the sample)")
    drops = serve.add_argument_group("drops (a window of scores against a baseline, with the gate's rules)")
    drops.add_argument(
        "--fail-on",
        action="append",
        default=[],
        type=parse_rule,
        metavar="METRIC[:MARGIN]",
        help="watch METRIC for a significant drop (Holm over the watched metrics, p < --alpha), or, "
        "with a MARGIN, for a window not shown to be at most MARGIN worse; repeatable",
    )
    drops.add_argument("--window", help=f"the window checked: 30m, 1h, 1d, … ({DEFAULT_WINDOW})")
    drops.add_argument("--check-every", help=f"the time between checks ({DEFAULT_EVERY})")
    drops.add_argument(
        "--baseline",
        type=path_arg,
        metavar="RUN",
        help="a run folder ('ragmeter run --out') the windows are checked against (default: the window before)",
    )
    drops.add_argument("--webhook", metavar="URL", help="POST each check that finds a drop, as JSON, to URL")
    drops.add_argument("--alpha", type=float, help="the checks' significance level (0.05)")
    drops.add_argument(
        "--max-undefined",
        type=float,
        metavar="SHARE",
        help="a side with more of a metric's scores undefined is not checked (0.2)",
    )
    drops.add_argument(
        "--min-traces", type=int, help=f"defined scores a side needs before a rule is checked ({MIN_TRACES})"
    )


def _serve(args: argparse.Namespace) -> int:
    for package in ("uvicorn", "starlette", "prometheus_client", "jinja2", "matplotlib"):
        if util.find_spec(package) is None:
            raise MissingDependencyError(package, "serve", "ragmeter serve")
    import uvicorn

    names = [name.strip() for name in args.metrics.split(",") if name.strip()] if args.metrics else None
    if args.metrics is not None and not names:
        raise ConfigError(f"--metrics {args.metrics!r} names no metric: give metric or family names")
    resolve_metrics(names)  # an unknown name stops here, before the port is taken
    judged = [name.strip() for name in args.judged.split(",") if name.strip()]
    resolve_metrics(judged)
    if args.quiet <= 0 or args.max_backlog < 1:
        raise ConfigError("--quiet must be above 0 seconds and --max-backlog at least 1")
    if args.dry_run:
        raise ConfigError("ragmeter serve has no dry run: its judge calls depend on the traffic")
    if (args.judge is None) != (args.judge_sample == 0) or not 0 <= args.judge_sample <= 1:
        raise ConfigError(
            "--judge and --judge-sample go together: a share above 0 and at most 1 of the traces is "
            "judged by the judge given"
        )
    if args.judge_budget is not None and (args.judge is None or args.judge_budget < 1):
        raise ConfigError("--judge-budget is the judge's tokens an hour (at least 1), with --judge")
    judge_cache = (
        args.store.with_name(args.store.name + ".judge-cache.sqlite")
        if isinstance(args.store, Path)
        else cache_dir() / "serve-judge-cache.sqlite"
    )
    config = judge_options.judge_config(args, judge_cache)
    watching = _watch_settings(args)
    if args.forward is not None:
        check_url(args.forward)
    with open_store(args.store) as store, contextlib.ExitStack() as stack:
        judge = stack.enter_context(open_judge(config)) if config is not None else None
        if judge is not None:  # counted for /metrics, and held within the budget when one is given
            judge.backend = BudgetedBackend(judge.backend, store, args.judge_budget)
        scorer = Scorer(
            store,
            metrics=names,
            settings=Settings(n_resamples=100),
            quiet_s=args.quiet,
            judge=judge,
            judged=judged,
            sample=args.judge_sample,
        )
        watch = DropWatch(store, watching) if watching is not None else None
        forwarder = Forwarder(store, args.forward) if args.forward is not None else None
        app = create_app(store, scorer, watch=watch, forwarder=forwarder, max_backlog=args.max_backlog)
        print(
            f"ragmeter serve: receiving OTLP/HTTP traces at http://{args.host}:{args.port}/v1/traces, "
            f"storing them in {args.store}"
            + (f"; judging {args.judge_sample:.0%} of them with {judge.description}" if judge is not None else "")
            + (
                f"; checking the last {args.window or DEFAULT_WINDOW} every {args.check_every or DEFAULT_EVERY} "
                f"against {'the window before' if watching.baseline is None else watching.baseline.name} for drops "
                "in " + ", ".join(map(str, watching.rules))
                if watching is not None
                else ""
            )
            + (f"; forwarding the scores to {args.forward}" if forwarder is not None else "")
            + f"; the page at http://{args.host}:{args.port}/",
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _watch_settings(args: argparse.Namespace) -> WatchSettings | None:
    """What ``--fail-on`` and its options ask to watch, checked (the baseline run read) before the port is taken."""
    if not args.fail_on:
        refuse_unused(
            args,
            "without --fail-on",
            ("window", "check_every", "baseline", "webhook", "alpha", "max_undefined", "min_traces"),
        )
        return None
    baseline = None
    if args.baseline is not None:
        store = args.store.resolve() if isinstance(args.store, Path) else None
        if any(path.resolve() == store for path in files_read(args.baseline)):
            raise ConfigError(f"--store {args.store} is a file of the baseline run {args.baseline}: give another store")
        baseline = load_run(args.baseline)
    given = {"alpha": args.alpha, "max_undefined": args.max_undefined, "min_traces": args.min_traces}
    return WatchSettings(
        tuple(args.fail_on),
        seconds(args.window or DEFAULT_WINDOW, "--window"),
        seconds(args.check_every or DEFAULT_EVERY, "--check-every"),
        baseline,
        args.webhook,
        **{name: value for name, value in given.items() if value is not None},
    )


COMMAND = Command(
    "serve",
    "receive production traces over OTLP/HTTP, store them and score each as it completes",
    add_arguments,
    _serve,
)
