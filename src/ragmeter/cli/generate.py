"""``ragmeter generate``: a test set from a team's documents, checked item by item, with a report of what was dropped
and why."""

from __future__ import annotations

import argparse
import sys

from ragmeter.app.generate import generate, plan_generation
from ragmeter.cli import judge_options
from ragmeter.cli.common import Command, overwrite_option, path_arg
from ragmeter.core.errors import ConfigError
from ragmeter.models import EMBEDDER_BACKENDS
from ragmeter.testsets.chunking import DEFAULT_MAX_CHARS, DEFAULT_OVERLAP
from ragmeter.testsets.pipeline import GENERATED_KINDS, GenerateReport


def add_arguments(generate: argparse.ArgumentParser) -> None:
    generate.add_argument(
        "corpus",
        type=path_arg,
        help="a folder of .txt, .md, .html and .pdf documents, or a JSONL/Parquet file of chunks "
        "(id, text, optional doc_id) used as they are",
    )
    generate.add_argument("-o", "--output", type=path_arg, required=True, help="the test set, a JSONL of records")
    generate.add_argument("--n", type=int, default=50, help="items to keep (50)")
    generate.add_argument(
        "--types",
        default="factoid,explanation",
        help=f"kinds of question, comma-separated: {', '.join(GENERATED_KINDS)} (factoid,explanation)",
    )
    generate.add_argument("--seed", type=int, default=0, help="which chunks are asked, in what order (0)")
    generate.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        help=f"a chunk's characters at most, for a folder of documents ({DEFAULT_MAX_CHARS})",
    )
    generate.add_argument(
        "--overlap",
        type=int,
        default=DEFAULT_OVERLAP,
        help=f"sentences a chunk repeats of the one before ({DEFAULT_OVERLAP})",
    )
    generate.add_argument(
        "--embedder",
        choices=EMBEDDER_BACKENDS,
        default="auto",
        help="finds the chunks an unanswerable question is checked against (auto: each language's own)",
    )
    generate.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    overwrite_option(generate, "an existing OUTPUT")
    judge_options.add_judge_options(generate, title="LLM judge (writes and checks the items)", cache_beside_output=True)


def _generate(args: argparse.Namespace) -> int:
    if args.judge is None:
        raise ConfigError(
            "ragmeter generate writes its items with a judge: add --judge local (the packaged model, "
            "offline) or --judge openai --judge-model NAME"
        )
    kinds = [kind.strip() for kind in args.types.split(",") if kind.strip()]
    config = judge_options.judge_config(args, args.output.with_name(args.output.name + ".judge-cache.sqlite"))
    assert config is not None
    if args.dry_run:
        planned, identity = plan_generation(
            args.corpus,
            args.output,
            config,
            n=args.n,
            kinds=kinds,
            seed=args.seed,
            max_chars=args.max_chars,
            overlap=args.overlap,
            overwrite=args.overwrite,
        )
        print(judge_options.render_plan(planned, identity, judge_options.prices(args)))
        print(
            "Counted: the writing calls of every planned item (at most two per item wanted; the run stops once it "
            "has its items). Not counted: the checks of what is written (an answer's claims, an unanswerable "
            "question's nearest chunks, a follow-up's own call and its two checks), about one call per written item."
        )
        return 0
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=args.n, unit="item", desc="kept", leave=False)

    def progress(report: GenerateReport) -> None:
        if bar is not None:
            bar.update(sum(report.kept.values()) - bar.n)
            bar.set_postfix_str(f"{sum(report.asked.values())} asked")

    try:
        done = generate(
            args.corpus,
            args.output,
            judge=config,
            n=args.n,
            types=kinds,
            seed=args.seed,
            max_chars=args.max_chars,
            overlap=args.overlap,
            overwrite=args.overwrite,
            embedder=args.embedder,
            on_batch=progress,
        )
    finally:
        if bar is not None:
            bar.close()
    report = done.report
    print(f"{args.corpus}: {done.chunks} chunks" + (f"; {len(done.skipped)} file(s) skipped" if done.skipped else ""))
    for name, why in done.skipped:
        print(f"  skipped {name}: {why}")
    print(f"{'kind':<14}{'asked':>7}{'kept':>7}")
    for kind in kinds:
        print(f"{kind:<14}{report.asked[kind]:>7}{report.kept[kind]:>7}")
    for (kind, reason), count in sorted(report.dropped.items()):
        print(f"  dropped {count} {kind}: {reason}")
    if report.why_short:
        print(f"fewer than asked: {report.why_short}")
    print(
        f"written: {done.output} ({sum(report.kept.values())} items)"
        if done.output
        else "nothing written: no item was kept"
    )
    print(f"signature: {report.signature}")
    return 0 if done.output else 1


COMMAND = Command(
    "generate",
    "write a test set from a team's documents, each item checked before it is kept",
    add_arguments,
    _generate,
)
