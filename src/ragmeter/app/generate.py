"""``ragmeter generate`` as a library function: a test set written from a corpus into a JSONL file of records."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragmeter.core.files import Outputs, Target, atomic_write_text
from ragmeter.engine.evaluation import JudgePlan, plan_calls
from ragmeter.generate.corpus import read_chunks
from ragmeter.generate.pipeline import GenerateReport, generate, plan, writing_calls
from ragmeter.io.native import record_to_dict
from ragmeter.judges import JudgeConfig, open_judge, planning_judge
from ragmeter.judges.cache import is_verdict_cache
from ragmeter.models import load_embedder

__all__ = ["Generated", "generate_file", "plan_generation"]


@dataclass(frozen=True)
class Generated:
    """What a run wrote: the report, how many chunks it read, the corpus files it skipped (with why), and the file
    (``None`` when no item was kept: no empty file is written)."""

    report: GenerateReport
    chunks: int
    skipped: tuple[tuple[str, str], ...]
    output: Path | None


def _targets(corpus: Path, output: Path, config: JudgeConfig, overwrite: bool) -> Target:
    """The output file (checked, with the judge's cache, before any work)."""
    outputs = Outputs([corpus], overwrite=overwrite)
    target = outputs.file(output, flag="-o")
    if config.cache is not None:
        outputs.file(config.cache, flag="--judge-cache", reusable=is_verdict_cache)
    return target


def plan_generation(corpus: Path, output: Path, config: JudgeConfig, *, n: int, kinds: Sequence[str], seed: int,
                    max_chars: int, overlap: int, overwrite: bool) -> tuple[JudgePlan, str]:
    """The writing calls :func:`generate_file` would make at most and their tokens, calling nothing (those in the
    cache apart): the plan and the judge's identity. The checks' calls depend on what is written, and are not
    counted."""
    _targets(corpus, output, config, overwrite)
    planned = plan(read_chunks(corpus, max_chars=max_chars, overlap=overlap), n, kinds, seed=seed)
    planner = planning_judge(config)
    try:
        return plan_calls(writing_calls(planned), planner, len(planned)), planner.identity
    finally:
        planner.close()


def generate_file(corpus: Path, output: Path, config: JudgeConfig, *, n: int, kinds: Sequence[str], seed: int,
                  max_chars: int, overlap: int, overwrite: bool, embedder: str = "auto",
                  on_batch: Callable[[GenerateReport], None] | None = None) -> Generated:
    """Write up to ``n`` items of ``kinds`` from ``corpus`` (a folder of documents, or a chunk file) to ``output``
    (:func:`ragmeter.generate.pipeline.generate`); the output and the judge's cache are checked before any work, and
    no file of the corpus is ever written. ``embedder``: the backend that finds the chunks an unanswerable question
    is checked against (``auto``: each language's own), loaded only when one is asked for; ``on_batch``: given the
    report so far after each batch."""
    target = _targets(corpus, output, config, overwrite)
    chunks = read_chunks(corpus, max_chars=max_chars, overlap=overlap)
    judge = open_judge(config)
    try:
        records, report = generate(chunks, judge, n=n, kinds=kinds, seed=seed,
                                   embedder_for=functools.cache(lambda code: load_embedder(embedder, code)),
                                   on_batch=on_batch)
    finally:
        judge.close()
    if records:
        atomic_write_text(target, "".join(json.dumps(record_to_dict(r), ensure_ascii=False) + "\n" for r in records))
    return Generated(report, len(chunks.chunks), chunks.skipped, output if records else None)
